package render

// Helm compiles a chart's values.schema.json on every render, a fifth of a render's time. Schemas compiles each
// schema once per process and says whether values meet it. It only gives the verdict: where values do not meet a
// schema (or Schemas cannot tell), the server renders again with helm's own validation, so every error the user
// sees is helm's, word for word.

import (
	"fmt"
	"io"
	"strings"
	"sync"
)

// TemplateWith renders once, as `helm template` does with f. With skipSchema it leaves helm's schema validation
// out and says what Schemas makes of the values that helm rendered with (Unknown where helm stopped before).
type TemplateWith func(f *Flags, stderr io.Writer, skipSchema bool) (string, Verdict, error)

// SchemasFirst renders without helm's schema validation first, which Schemas stands in for; where Schemas finds
// the values invalid, or cannot tell, it renders again with helm validating, so the error and everything logged
// are helm's own.
func SchemasFirst(templateWith TemplateWith) Template {
	return func(f *Flags, stderr io.Writer) (string, error) {
		if !f.SkipSchemaValidation {
			var logs strings.Builder
			out, verdict, err := templateWith(f, &logs, true)
			if verdict == Valid {
				io.WriteString(stderr, logs.String())
				return out, err
			}
		}
		out, _, err := templateWith(f, stderr, f.SkipSchemaValidation)
		return out, err
	}
}

// Schemas judges values with the JSON Schema library of one helm major, as that helm calls it.
type Schemas struct {
	// Compile compiles a schema as helm does before each validation, and returns what validates values with it.
	Compile func(schema []byte) (Validator, error)

	mu       sync.Mutex
	compiled map[string]compiled
}

// Validator validates values with one compiled schema: nil where they meet it.
type Validator func(values map[string]any) error

type compiled struct {
	validate Validator
	err      error
}

// Verdict is what Schemas can say of values.
type Verdict int

const (
	Unknown Verdict = iota // only helm can tell (a schema that does not compile here, a panic)
	Valid
	Invalid
)

// Hold judges values against chart's schema and, for each subchart whose values are set, against the subchart's,
// walking the charts as helm's ValidateAgainstSchema does.
func Hold[C any, P Chart[C]](s *Schemas, chart *C, values map[string]any, name func(*C) string,
	schema func(*C) []byte) Verdict {
	if own := schema(chart); own != nil {
		if verdict := s.judge(own, values); verdict != Valid {
			return verdict
		}
	}
	for _, sub := range P(chart).Dependencies() {
		subValues, ok := values[name(sub)].(map[string]any)
		if !ok {
			return Unknown // none, or not a map: Helm 4 says so or skips them, Helm 3 stops
		}
		if verdict := Hold[C, P](s, sub, subValues, name, schema); verdict != Valid {
			return verdict
		}
	}
	return Valid
}

func (s *Schemas) judge(schema []byte, values map[string]any) (verdict Verdict) {
	s.mu.Lock()
	entry, ok := s.compiled[string(schema)]
	s.mu.Unlock()
	if !ok {
		entry.validate, entry.err = s.compileSafely(schema)
		s.mu.Lock()
		keep(&s.compiled, string(schema), entry)
		s.mu.Unlock()
	}
	if entry.err != nil {
		return Unknown
	}
	defer func() {
		if recover() != nil {
			verdict = Unknown
		}
	}()
	if entry.validate(values) != nil {
		return Invalid
	}
	return Valid
}

func (s *Schemas) compileSafely(schema []byte) (validate Validator, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("compiling the schema panicked: %v", p)
		}
	}()
	return s.Compile(schema)
}
