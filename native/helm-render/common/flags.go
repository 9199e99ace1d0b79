// Package render serves `helm template` in one long-lived process: the request is the argv a `helm template`
// process would get, the reply is what that process would print (stdout, stderr, exit status), and each rendered
// object decoded once, as the harness's PyYAML would decode it (objects.go).
//
// Each helm major has its own main package (../helm4, ../helm3) that links the pinned helm and implements
// Template with that helm's own pkg/action; this package holds what does not depend on the helm version.
package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Flags are the `helm template` flags the server renders itself. Any other flag (or a global one such as --debug
// or --kube-context) makes the request Unsupported, and the caller runs the helm binary for it.
type Flags struct {
	Args        []string // positionals: [NAME] CHART
	Namespace   string
	KubeVersion string
	APIVersions []string

	ValueFiles    []string // --values/-f: split at commas, as helm's string-slice flag does
	Values        []string // --set
	StringValues  []string // --set-string
	JSONValues    []string // --set-json
	FileValues    []string // --set-file
	LiteralValues []string // --set-literal

	IncludeCRDs          bool
	SkipTests            bool
	IsUpgrade            bool
	NoHooks              bool
	SkipSchemaValidation bool
}

// Unsupported means the request needs something the server does not do; the caller renders it with the binary.
type Unsupported struct{ Reason string }

func (u *Unsupported) Error() string { return u.Reason }

// ParseFlags reads `template ARGS...` with the flag types helm declares (string slices split at commas, string
// arrays kept whole), so a value means what it means to the binary. defaultNamespace is what helm's --namespace
// defaults to ($HELM_NAMESPACE).
func ParseFlags(argv []string, defaultNamespace string) (*Flags, error) {
	if len(argv) == 0 || argv[0] != "template" {
		return nil, &Unsupported{"only `helm template` is served"}
	}
	f := &Flags{}
	set := pflag.NewFlagSet("template", pflag.ContinueOnError)
	set.SetOutput(io.Discard)
	set.StringVarP(&f.Namespace, "namespace", "n", defaultNamespace, "")
	set.StringVar(&f.KubeVersion, "kube-version", "", "")
	set.StringSliceVarP(&f.APIVersions, "api-versions", "a", []string{}, "")
	set.StringSliceVarP(&f.ValueFiles, "values", "f", []string{}, "")
	set.StringArrayVar(&f.Values, "set", []string{}, "")
	set.StringArrayVar(&f.StringValues, "set-string", []string{}, "")
	set.StringArrayVar(&f.JSONValues, "set-json", []string{}, "")
	set.StringArrayVar(&f.FileValues, "set-file", []string{}, "")
	set.StringArrayVar(&f.LiteralValues, "set-literal", []string{}, "")
	set.BoolVar(&f.IncludeCRDs, "include-crds", false, "")
	set.BoolVar(&f.SkipTests, "skip-tests", false, "")
	set.BoolVar(&f.IsUpgrade, "is-upgrade", false, "")
	set.BoolVar(&f.NoHooks, "no-hooks", false, "")
	set.BoolVar(&f.SkipSchemaValidation, "skip-schema-validation", false, "")
	if err := set.Parse(argv[1:]); err != nil {
		// helm prints its own usage text for these; only the binary says it the same way
		return nil, &Unsupported{fmt.Sprintf("flags: %v", err)}
	}
	f.Args = set.Args()
	if len(f.Args) == 0 {
		return nil, &Unsupported{"no chart named"}
	}
	chart := f.Args[len(f.Args)-1]
	if len(f.Args) <= 2 && !(strings.HasPrefix(chart, "/") || strings.HasPrefix(chart, ".")) {
		// a repository or OCI reference: helm would download it
		return nil, &Unsupported{fmt.Sprintf("chart %q is not a path", chart)}
	}
	return f, nil
}

// Hook is a rendered hook as `helm template` prints it.
type Hook struct {
	Path     string
	Manifest string
	IsTest   bool
}

// Output is what `helm template` prints on success (no --show-only, no --output-dir): the manifest, trimmed, then
// every hook under its own `# Source:` line unless --no-hooks, leaving test hooks out with --skip-tests.
func Output(manifest string, hooks []Hook, f *Flags) string {
	var out strings.Builder
	out.WriteString(strings.TrimSpace(manifest))
	out.WriteString("\n")
	if f.NoHooks {
		return out.String()
	}
	for _, h := range hooks {
		if f.SkipTests && h.IsTest {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", h.Path, h.Manifest)
	}
	return out.String()
}

// RenderFailed is the error `helm template` returns when the render itself failed (it had a release).
func RenderFailed(err error) error {
	return fmt.Errorf("%w\n\nUse --debug flag to render out invalid YAML", err)
}

// NotInstallable is the install command's refusal of a chart whose type is neither "" nor "application".
func NotInstallable(chartType any) error {
	return fmt.Errorf("%s charts are not installable", chartType)
}
