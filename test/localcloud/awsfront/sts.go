package awsfront

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/xml"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// staticKeys are the credentials the local cloud's clients use by default
// (DirectConfig): access key "testing", secret "testing".
var staticKeys = map[string]string{"testing": "testing"}

// assumeRole forwards sts:AssumeRole to moto and remembers the temporary
// credentials it hands out, so presigned requests signed with them can be
// verified (moto verifies no signature).
func (f *Front) assumeRole(w http.ResponseWriter, r *http.Request, req request) {
	status, body, err := f.motoCall(r.Context(), r, req.form)
	if err != nil {
		writeJSONError(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if status == http.StatusOK {
		var out struct {
			Creds struct {
				AccessKeyID     string `xml:"AccessKeyId"`
				SecretAccessKey string `xml:"SecretAccessKey"`
			} `xml:"AssumeRoleResult>Credentials"`
		}
		if xml.Unmarshal(body, &out) == nil && out.Creds.AccessKeyID != "" {
			f.mu.Lock()
			f.secrets[out.Creds.AccessKeyID] = out.Creds.SecretAccessKey
			f.mu.Unlock()
		}
	}
	w.Header().Set("Content-Type", "text/xml")
	writeRaw(w, status, body)
}

// verifyPresigned checks the SigV4 signature of a presigned STS request (the
// EKS token's GetCallerIdentity) as STS would, and answers 403 when it does
// not match; it returns whether it answered. A token signed for another
// cluster fails here: x-k8s-aws-id is a signed header and the verifier sends
// its own cluster's name.
func (f *Front) verifyPresigned(w http.ResponseWriter, r *http.Request) bool {
	q := r.URL.Query()
	sig := q.Get("X-Amz-Signature")
	if r.Method != http.MethodGet || q.Get("Action") != "GetCallerIdentity" || sig == "" {
		return false
	}
	fail := func(code, msg string) bool {
		f.log.Info("presigned request refused", "code", code, "reason", msg)
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(xml.Header + `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>` +
			code + `</Code><Message>` + msg + `</Message></Error><RequestId>` + requestID() + `</RequestId></ErrorResponse>`))
		return true
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/")
	if len(scope) != 5 {
		return fail("IncompleteSignature", "bad X-Amz-Credential")
	}
	f.mu.Lock()
	secret, ok := f.secrets[scope[0]]
	f.mu.Unlock()
	if !ok {
		secret, ok = staticKeys[scope[0]]
	}
	if !ok {
		return fail("InvalidClientTokenId", "The security token included in the request is invalid.")
	}
	at, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return fail("IncompleteSignature", "bad X-Amz-Date")
	}
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	q.Del("X-Amz-Signature")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, u.String(), nil)
	if err != nil {
		return fail("IncompleteSignature", err.Error())
	}
	for _, h := range strings.Split(q.Get("X-Amz-SignedHeaders"), ";") {
		if h != "host" {
			req.Header.Set(h, r.Header.Get(h))
		}
	}
	empty := sha256.Sum256(nil)
	creds := aws.Credentials{AccessKeyID: scope[0], SecretAccessKey: secret, SessionToken: q.Get("X-Amz-Security-Token")}
	signed, _, err := v4.NewSigner().PresignHTTP(r.Context(), creds, req, hex.EncodeToString(empty[:]), scope[3], scope[2], at)
	if err != nil {
		return fail("IncompleteSignature", err.Error())
	}
	want := signedValue(signed, "X-Amz-Signature")
	if subtle.ConstantTimeCompare([]byte(want), []byte(sig)) != 1 {
		return fail("SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.")
	}
	return false
}

func signedValue(rawURL, param string) string {
	i := strings.Index(rawURL, param+"=")
	if i < 0 {
		return ""
	}
	v := rawURL[i+len(param)+1:]
	if j := strings.IndexByte(v, '&'); j >= 0 {
		v = v[:j]
	}
	return v
}
