package apis

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Parse reads the documents of one source: multi-document YAML (or a stream
// of JSON objects), with List documents expanded into their items. Each
// NodePool and EC2NodeClass is decoded strictly, defaulted and validated; a
// document of another kind goes to Config.Other unread. Karpenter's older
// apiVersions of the two kinds are errors. source names the input in error
// messages ("nodepool.yaml: document 2 (NodePool default): spec.weight: ...").
//
// Every problem is reported (as Errors); the returned Config then holds the
// documents that were read without error. Parse does not call
// Config.Validate.
func Parse(data []byte, source string) (*Config, error) {
	p := &parser{source: source, cfg: &Config{origins: map[any]Document{}}}
	docs, splitErr := splitDocuments(data)
	for _, d := range docs {
		p.document(d)
	}
	if splitErr != nil {
		p.errs = append(p.errs, &DocumentError{Source: source, Index: len(docs) + 1, Err: splitErr})
	}
	p.cfg.sort()
	return p.cfg, p.errs.asError()
}

// LoadFiles parses each file (named in errors by the path given) and merges
// the results. Every file is read even when an earlier one has errors.
func LoadFiles(paths ...string) (*Config, error) {
	cfg := &Config{origins: map[any]Document{}}
	var errs Errors
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", path, err))
			continue
		}
		c, err := Parse(data, path)
		cfg.merge(c)
		var list Errors
		if errors.As(err, &list) {
			errs = append(errs, list...)
		} else if err != nil {
			errs = append(errs, err)
		}
	}
	cfg.sort()
	return cfg, errs.asError()
}

// LoadDir loads the *.yaml, *.yml and *.json files of dir (not its
// sub-directories) in name order. A directory without such files gives an
// empty Config.
func LoadDir(dir string) (*Config, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	var paths []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		path := filepath.Join(dir, e.Name())
		if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
			paths = append(paths, path)
		}
	}
	return LoadFiles(paths...)
}

// rawDocument is one document of a source as JSON, or the error that kept it
// from being read.
type rawDocument struct {
	index int
	json  []byte
	err   error
}

// splitDocuments splits a source into documents: a stream of JSON objects
// when it starts with "{" and its first object is JSON, else YAML documents
// separated by "---" lines.
// Empty documents are skipped and not counted. The error is for a JSON stream
// that cannot be read further.
func splitDocuments(data []byte) ([]rawDocument, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '{' {
		docs, err := splitJSON(data)
		if err == nil || len(docs) > 0 {
			return docs, err
		}
		// Not JSON after all: a YAML document in flow style, like {a: b}.
	}
	var docs []rawDocument
	for _, c := range splitYAML(data) {
		j, err := yaml.YAMLToJSONStrict(c.text)
		if err == nil && isNull(j) {
			continue
		}
		d := rawDocument{index: len(docs) + 1, json: j}
		if err != nil {
			d.err = yamlError(err, c.line)
		}
		docs = append(docs, d)
	}
	return docs, nil
}

func splitJSON(data []byte) ([]rawDocument, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []rawDocument
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				return docs, fmt.Errorf("json: line %d: %v", 1+bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n")), err)
			}
			return docs, fmt.Errorf("json: %v", err)
		}
		docs = append(docs, rawDocument{index: len(docs) + 1, json: raw})
	}
}

// yamlChunk is one YAML document and the line of the source it starts on.
type yamlChunk struct {
	text []byte
	line int
}

// splitYAML cuts YAML at document separator lines ("---", optionally
// followed by a comment), as kubectl does.
func splitYAML(data []byte) []yamlChunk {
	var chunks []yamlChunk
	start, startLine, line := 0, 1, 1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		if isSeparator(data[off:next]) {
			chunks = append(chunks, yamlChunk{text: data[start:off], line: startLine})
			start, startLine = next, line+1
		}
		off = next
		line++
	}
	return append(chunks, yamlChunk{text: data[start:], line: startLine})
}

func isSeparator(line []byte) bool {
	rest, ok := bytes.CutPrefix(line, []byte("---"))
	if !ok {
		return false
	}
	rest = bytes.TrimSpace(rest)
	return len(rest) == 0 || rest[0] == '#'
}

var yamlLinePattern = regexp.MustCompile(`line (\d+)`)

// yamlError puts a YAML parser error on one line, with line numbers counted
// from the start of the source rather than of the document.
func yamlError(err error, firstLine int) error {
	msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "unmarshal errors:\n", "")), " ")
	msg = yamlLinePattern.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(strings.TrimPrefix(m, "line "))
		if convErr != nil {
			return m
		}
		return fmt.Sprintf("line %d", n+firstLine-1)
	})
	return errors.New(msg)
}
