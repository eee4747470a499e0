// Package pki makes the local cluster's credentials: a cluster CA (what EKS
// reports as certificateAuthority.data), the API server's serving
// certificate for 127.0.0.1, the service-account signing key and a random
// admin bearer token.
package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of the written credentials.
type Files struct {
	CACert      string // PEM CA certificate
	ServingCert string // PEM serving certificate for 127.0.0.1/localhost
	ServingKey  string
	SAKey       string // PEM private key that signs service-account tokens
	SAPub       string // PEM public key that verifies them
	TokenFile   string // kube-apiserver --token-auth-file
	CAPEM       []byte
	AdminToken  string
}

// Write creates the credentials in dir.
func Write(dir string, now time.Time) (*Files, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	caKey, caCert, caDER, err := newCA(now)
	if err != nil {
		return nil, err
	}
	srvKey, srvDER, err := newServing(now, caKey, caCert)
	if err != nil {
		return nil, err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: service-account key: %w", err)
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("pki: token: %w", err)
	}
	f := &Files{
		CACert:      filepath.Join(dir, "ca.crt"),
		ServingCert: filepath.Join(dir, "apiserver.crt"),
		ServingKey:  filepath.Join(dir, "apiserver.key"),
		SAKey:       filepath.Join(dir, "sa.key"),
		SAPub:       filepath.Join(dir, "sa.pub"),
		TokenFile:   filepath.Join(dir, "tokens.csv"),
		CAPEM:       pemBlock("CERTIFICATE", caDER),
		AdminToken:  hex.EncodeToString(tok),
	}
	srvKeyDER, err := x509.MarshalECPrivateKey(srvKey)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	saKeyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	saPubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	writes := []struct {
		path string
		data []byte
	}{
		{f.CACert, f.CAPEM},
		{f.ServingCert, pemBlock("CERTIFICATE", srvDER)},
		{f.ServingKey, pemBlock("EC PRIVATE KEY", srvKeyDER)},
		{f.SAKey, pemBlock("EC PRIVATE KEY", saKeyDER)},
		{f.SAPub, pemBlock("PUBLIC KEY", saPubDER)},
		// token,user,uid,"group": system:masters is the superuser group.
		{f.TokenFile, []byte(f.AdminToken + `,admin,admin,"system:masters"` + "\n")},
	}
	for _, w := range writes {
		if err := os.WriteFile(w.path, w.data, 0o600); err != nil {
			return nil, fmt.Errorf("pki: %w", err)
		}
	}
	return f, nil
}

func newCA(now time.Time) (*ecdsa.PrivateKey, *x509.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: CA key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kubernetes"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("pki: CA: %w", err)
	}
	return key, cert, der, nil
}

func newServing(now time.Time, caKey *ecdsa.PrivateKey, ca *x509.Certificate) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: serving key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(365 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: serving certificate: %w", err)
	}
	return key, der, nil
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
