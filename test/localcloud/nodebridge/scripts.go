package nodebridge

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strings"
)

// AL2's and Windows's user data are scripts that call their image's
// bootstrap with the kubelet's flags in one argument.
const (
	al2Bootstrap         = "/etc/eks/bootstrap.sh"
	windowsClusterOption = "-EKSClusterName"
	powershellOpen       = "<powershell>"
	kubeletExtraAL2      = "--kubelet-extra-args"
	kubeletExtraWin      = "-KubeletExtraArgs"
	shellScriptPrefix    = "text/x-shellscript"
)

// bootstrapArgs finds the call to an image's bootstrap script in user data
// (AL2: a shell part of a MIME document; Windows: a <powershell> block) and
// returns the kubelet flags it passes and whether the node runs Windows;
// ok is false when the user data calls neither.
func bootstrapArgs(data []byte) (flags []string, windows, ok bool, err error) {
	if bytes.Contains(data, []byte(powershellOpen)) {
		words, found := callWords(string(data), isWindowsCall, powershellWords)
		if !found {
			return nil, true, false, nil
		}
		return kubeletFlags(words, kubeletExtraWin), true, true, nil
	}
	scripts, err := shellParts(data)
	if err != nil {
		return nil, false, false, err
	}
	for i := len(scripts) - 1; i >= 0; i-- {
		if words, found := callWords(scripts[i], isAL2Call, shellWords); found {
			return kubeletFlags(words, kubeletExtraAL2), false, true, nil
		}
	}
	return nil, false, false, nil
}

// shellParts are the shell script parts of a MIME multi-part document.
func shellParts(data []byte) ([]string, error) {
	msg, err := mail.ReadMessage(bufio.NewReader(bytes.NewReader(data)))
	if err != nil || msg.Header.Get("Content-Type") == "" {
		return nil, nil
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, nil
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var out []string
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("user data: multipart: %w", err)
		}
		b, err := io.ReadAll(part)
		if err != nil {
			return nil, fmt.Errorf("user data: multipart: %w", err)
		}
		if strings.HasPrefix(part.Header.Get("Content-Type"), shellScriptPrefix) {
			out = append(out, string(b))
		}
	}
}

// callWords is the words of the last command in script that calls the
// image's bootstrap (continued lines joined): AL2's runs bootstrap.sh,
// Windows's passes -EKSClusterName to the script a variable names.
func callWords(script string, isCall func([]string) bool, split func(string) []string) ([]string, bool) {
	joined := strings.ReplaceAll(script, "\\\n", " ")
	lines := strings.Split(joined, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if words := split(lines[i]); isCall(words) {
			return words, true
		}
	}
	return nil, false
}

func isAL2Call(words []string) bool { return len(words) > 0 && words[0] == al2Bootstrap }

func isWindowsCall(words []string) bool {
	return len(words) > 0 && words[0] == "&" && slices.Contains(words, windowsClusterOption)
}

// kubeletFlags splits the word after option into the kubelet's flags,
// each --name=value with the double quotes around its value removed.
func kubeletFlags(words []string, option string) []string {
	for i, w := range words {
		if w != option || i+1 >= len(words) {
			continue
		}
		var out []string
		for _, f := range strings.Fields(words[i+1]) {
			name, value, found := strings.Cut(f, "=")
			if found {
				f = name + "=" + strings.Trim(value, `"`)
			}
			out = append(out, f)
		}
		return out
	}
	return nil
}

// shellWords splits a POSIX shell line into words: single quotes keep
// everything, a backslash outside quotes keeps the next character.
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in, quoted, escaped := false, false, false
	for _, r := range line {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case quoted:
			if r == '\'' {
				quoted = false
			} else {
				cur.WriteRune(r)
			}
		case r == '\\':
			escaped, in = true, true
		case r == '\'':
			quoted, in = true, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// powershellWords splits a PowerShell line into words: within single
// quotes, two quotes stand for one.
func powershellWords(line string) []string {
	var words []string
	var cur strings.Builder
	in := false
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '\'':
			in = true
			for i++; i < len(rs); i++ {
				if rs[i] == '\'' {
					if i+1 < len(rs) && rs[i+1] == '\'' {
						cur.WriteRune('\'')
						i++
						continue
					}
					break
				}
				cur.WriteRune(rs[i])
			}
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}
