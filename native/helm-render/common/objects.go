package render

// The harness splits `helm template`'s stream at `---` lines and decodes each piece with PyYAML's YAML 1.1
// SafeLoader (libyaml's parser, PyYAML's resolver and constructor). Decoding is most of the time of validating a
// render in Python, so the server decodes each piece here and sends it as JSON, which Python reads many times
// faster, with the same result: the same types for every scalar ("yes" and "on" are booleans, "0777" is octal,
// "1e3" is a string, "1:20" is 80). Where JSON cannot say what PyYAML would build (a date, a NaN, a key that is
// not a string, an explicit tag, an anchor, a merge key, input PyYAML might reject) the piece is marked for
// PyYAML, which then decides, errors included. tests/unit/test_render_server.py holds the two decoders to equality.

import (
	"bytes"
	"io"
	"math/big"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// PyYAML's implicit resolvers (yaml/resolver.py), tried in the order PyYAML registers them.
var (
	yamlBool      = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yamlFloat     = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	yamlInt       = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	yamlMerge     = regexp.MustCompile(`^(?:<<)$`)
	yamlNull      = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
	yamlTimestamp = regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`)
	yamlValue     = regexp.MustCompile(`^(?:=)$`)
)

// Python refuses to read integers longer than this from text (sys.int_info.default_max_str_digits is 4300).
const maxIntDigits = 4000

// WriteObjects appends `"objects":[...],"fallback":[...]` for manifest: one entry per piece between `---`
// lines (empty pieces included, so indexes match the harness's split), the decoded piece or null, and the
// indexes of the pieces left to PyYAML.
func WriteObjects(buf *bytes.Buffer, manifest string) {
	pieces := splitDocuments(manifest)
	decoded := make([][]byte, len(pieces)) // nil: left to PyYAML
	next := make(chan int)
	var workers sync.WaitGroup
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(pieces)); w++ { // a large stream decodes on every core
		workers.Add(1)
		go func() {
			defer workers.Done()
			for i := range next {
				var piece bytes.Buffer
				if writeDocument(&piece, pieces[i]) {
					decoded[i] = piece.Bytes()
				}
			}
		}()
	}
	for i := range pieces {
		next <- i
	}
	close(next)
	workers.Wait()
	var fallback []int
	buf.WriteString(`"objects":[`)
	for i, piece := range decoded {
		if i > 0 {
			buf.WriteByte(',')
		}
		if piece == nil {
			buf.WriteString("null")
			fallback = append(fallback, i)
		} else {
			buf.Write(piece)
		}
	}
	buf.WriteString(`],"fallback":[`)
	for i, index := range fallback {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteString(strconv.Itoa(index))
	}
	buf.WriteByte(']')
}

// splitDocuments splits a stream at its `---` lines as the harness does (dlcharts.render._DOC_SPLIT_RE.split, a
// multiline `^---[ \t]*$`): each such line's text goes, the newlines around it stay with the pieces. A scan by
// lines, as a regexp over a whole large stream took most of the decoding time.
func splitDocuments(text string) []string {
	var pieces []string
	start := 0 // where the current piece starts
	for lineStart := 0; ; {
		end := len(text)
		if i := strings.IndexByte(text[lineStart:], '\n'); i >= 0 {
			end = lineStart + i
		}
		if line := text[lineStart:end]; strings.HasPrefix(line, "---") && strings.Trim(line[3:], " \t") == "" {
			pieces = append(pieces, text[start:lineStart])
			start = end
		}
		if end == len(text) {
			return append(pieces, text[start:])
		}
		lineStart = end + 1
	}
}

// writeDocument writes one piece as JSON (null for an empty one) and says whether it could.
func writeDocument(buf *bytes.Buffer, text string) bool {
	if !utf8.ValidString(text) || strings.ContainsRune(text, '\ufeff') {
		return false // PyYAML rejects (or strips) these its own way
	}
	decoder := yaml.NewDecoder(strings.NewReader(text))
	var doc yaml.Node
	switch err := decoder.Decode(&doc); {
	case err == io.EOF:
		buf.WriteString("null")
		return true
	case err != nil:
		return false
	}
	var more yaml.Node
	if decoder.Decode(&more) != io.EOF {
		return false // PyYAML's yaml.load refuses a piece with two documents
	}
	if len(doc.Content) == 0 {
		buf.WriteString("null")
		return true
	}
	d := &document{text: text, bang: strings.IndexByte(text, '!') >= 0}
	return d.write(buf, doc.Content[0])
}

type document struct {
	text       string
	bang       bool  // the text has a '!', so a node may carry the non-specific tag
	lineStarts []int // byte offset of each line, computed when first needed
}

const quoted = yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle | yaml.LiteralStyle | yaml.FoldedStyle

func (d *document) write(buf *bytes.Buffer, n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode || n.Style&yaml.TaggedStyle != 0 {
		return false
	}
	switch n.Kind {
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i]
			if key.Kind != yaml.ScalarNode || key.Anchor != "" || key.Style&yaml.TaggedStyle != 0 {
				return false
			}
			if key.Style&quoted == 0 && (d.nonSpecificTag(key) || !isPlainString(key.Value)) {
				return false // PyYAML would build a bool, number or None key, or merge mappings
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, key.Value)
			buf.WriteByte(':')
			if !d.write(buf, n.Content[i+1]) {
				return false
			}
		}
		buf.WriteByte('}')
		return true
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if !d.write(buf, item) {
				return false
			}
		}
		buf.WriteByte(']')
		return true
	case yaml.ScalarNode:
		if n.Style&quoted != 0 {
			writeString(buf, n.Value)
			return true
		}
		if d.nonSpecificTag(n) {
			return false
		}
		return writePlain(buf, n.Value)
	}
	return false
}

// nonSpecificTag says whether a plain scalar is written `! value` (a string to PyYAML; yaml.v3 resolves it). A
// node's position is that of its tag when it has one, and a plain scalar never starts with '!'.
func (d *document) nonSpecificTag(n *yaml.Node) bool {
	if !d.bang {
		return false
	}
	if d.lineStarts == nil {
		d.lineStarts = []int{0}
		for i := 0; i < len(d.text); i++ {
			if d.text[i] == '\n' {
				d.lineStarts = append(d.lineStarts, i+1)
			}
		}
	}
	if n.Line < 1 || n.Line > len(d.lineStarts) {
		return true // cannot tell: let PyYAML decide
	}
	rest := d.text[d.lineStarts[n.Line-1]:]
	for column := 1; column < n.Column && rest != ""; column++ { // columns count characters
		_, size := utf8.DecodeRuneInString(rest)
		rest = rest[size:]
	}
	return strings.HasPrefix(rest, "!")
}

// byFirst holds PyYAML's implicit resolvers by the first character of a plain scalar, in the order it tries them
// (Resolver.add_implicit_resolver registers each under its first characters, and Resolver.resolve tries those of
// value[0], or of ” for an empty value). A scalar whose first character has none is a string, no regexp tried.
var byFirst, emptyResolvers = func() (table [256][]*regexp.Regexp, empty []*regexp.Regexp) {
	for _, r := range []struct {
		re    *regexp.Regexp
		first string
	}{
		{yamlBool, "yYnNtTfFoO"}, {yamlFloat, "-+0123456789."}, {yamlInt, "-+0123456789"}, {yamlMerge, "<"},
		{yamlNull, "~nN"}, {yamlTimestamp, "0123456789"}, {yamlValue, "="},
	} {
		for i := 0; i < len(r.first); i++ {
			table[r.first[i]] = append(table[r.first[i]], r.re)
		}
	}
	return table, []*regexp.Regexp{yamlNull}
}()

// resolved is the implicit resolver PyYAML picks for a plain scalar, or nil for a string.
func resolved(value string) *regexp.Regexp {
	candidates := emptyResolvers
	if value != "" {
		candidates = byFirst[value[0]]
	}
	for _, r := range candidates {
		if r.MatchString(value) {
			return r
		}
	}
	return nil
}

func isPlainString(value string) bool {
	return resolved(value) == nil
}

// writePlain writes a plain scalar as PyYAML's SafeConstructor builds it; false where JSON cannot hold that.
func writePlain(buf *bytes.Buffer, value string) bool {
	switch resolved(value) {
	case nil:
		writeString(buf, value)
		return true
	case yamlBool:
		switch strings.ToLower(value) {
		case "yes", "true", "on":
			buf.WriteString("true")
		default:
			buf.WriteString("false")
		}
		return true
	case yamlFloat:
		return writeFloat(buf, value)
	case yamlInt:
		return writeInt(buf, value)
	case yamlNull:
		buf.WriteString("null")
		return true
	}
	return false // a merge key; a datetime or date; a `=` PyYAML has no constructor for
}

// writeInt follows SafeConstructor.construct_yaml_int: underscores dropped, 0b binary, 0x hex, a leading 0
// octal, colons base 60.
func writeInt(buf *bytes.Buffer, value string) bool {
	value = strings.ReplaceAll(value, "_", "")
	negative := value[0] == '-'
	if value[0] == '-' || value[0] == '+' {
		value = value[1:]
	}
	n := new(big.Int)
	ok := true
	switch {
	case value == "0":
	case strings.HasPrefix(value, "0b"):
		_, ok = n.SetString(value[2:], 2)
	case strings.HasPrefix(value, "0x"):
		_, ok = n.SetString(value[2:], 16)
	case value[0] == '0':
		_, ok = n.SetString(value, 8)
	case strings.Contains(value, ":"):
		sixty := big.NewInt(60)
		for _, part := range strings.Split(value, ":") {
			digit, good := new(big.Int).SetString(part, 10)
			if !good {
				return false
			}
			n.Mul(n, sixty).Add(n, digit)
		}
	default:
		_, ok = n.SetString(value, 10)
	}
	if !ok {
		return false // "0b" alone: PyYAML raises, and says so
	}
	if negative {
		n.Neg(n)
	}
	text := n.String()
	if len(text) > maxIntDigits {
		return false
	}
	buf.WriteString(text)
	return true
}

// writeFloat follows SafeConstructor.construct_yaml_float for finite numbers; infinities, NaN and base 60 go to
// PyYAML.
func writeFloat(buf *bytes.Buffer, value string) bool {
	value = strings.ToLower(strings.ReplaceAll(value, "_", ""))
	negative := value[0] == '-'
	if value[0] == '-' || value[0] == '+' {
		value = value[1:]
	}
	if strings.HasPrefix(value, ".inf") || strings.HasPrefix(value, ".nan") || strings.Contains(value, ":") {
		return false
	}
	f, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return false // out of range: Python makes it an infinity
	}
	if negative {
		f = -f
	}
	text := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(text, ".e") {
		text += ".0" // "100" would read back as an int
	}
	buf.WriteString(text)
	return true
}

const hexDigits = "0123456789abcdef"

// writeString writes s as a JSON string: quotes, backslashes and control characters escaped, the rest as is.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf.WriteString(s[start:i])
		switch c {
		case '"', '\\':
			buf.WriteByte('\\')
			buf.WriteByte(c)
		case '\n':
			buf.WriteString(`\n`)
		case '\t':
			buf.WriteString(`\t`)
		case '\r':
			buf.WriteString(`\r`)
		default:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[c>>4])
			buf.WriteByte(hexDigits[c&0xf])
		}
		start = i + 1
	}
	buf.WriteString(s[start:])
	buf.WriteByte('"')
}
