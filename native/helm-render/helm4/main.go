// helm4-render: `helm template` in a long-lived process, with helm.sh/helm/v4 at the version the harness pins
// (go.mod). What a request may ask and what it gets back: ../common/serve.go. Each step below is the one the
// helm binary's template command takes (pkg/cmd/template.go and runInstall in pkg/cmd/install.go, read for the
// facts), through the same exported helm functions, so the output and the error text are the binary's.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/cli"
	"helm.sh/helm/v4/pkg/cli/values"
	"helm.sh/helm/v4/pkg/getter"
	release "helm.sh/helm/v4/pkg/release/v1"

	render "dlcharts.local/helm-render/common"
)

var settings = cli.New()

func main() {
	if settings.Debug {
		fmt.Fprintln(os.Stderr, "helm4-render: HELM_DEBUG is set; the helm binary prints more with it than the server does")
		os.Exit(2)
	}
	render.Serve(helmVersion(), os.Getenv("HELM_NAMESPACE"), render.SchemasFirst(templateWith))
}

// helmVersion is the version of the helm module linked in, as `helm version` prints it (v4.3.1).
func helmVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "helm.sh/helm/v4" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// newLogger logs as the helm CLI does (text records without a time; debug records only with --debug, never here).
func newLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: slog.LevelInfo,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// templateWith renders as `helm template` does (render.TemplateWith).
func templateWith(f *render.Flags, stderr io.Writer, skipSchema bool) (string, render.Verdict, error) {
	logger := newLogger(stderr)
	slog.SetDefault(logger)
	settings.SetNamespace(f.Namespace)
	cfg := action.NewConfiguration()
	cfg.SetLogger(logger.Handler())
	client := action.NewInstall(cfg)
	if f.KubeVersion != "" {
		parsed, err := common.ParseKubeVersion(f.KubeVersion)
		if err != nil {
			return "", render.Unknown, fmt.Errorf("invalid kube version '%s': %w", f.KubeVersion, err)
		}
		client.KubeVersion = parsed
	}
	client.DryRunStrategy = action.DryRunClient
	client.ReleaseName = "release-name"
	client.Replace = true
	client.APIVersions = common.VersionSet(f.APIVersions)
	client.IncludeCRDs = f.IncludeCRDs
	client.IsUpgrade = f.IsUpgrade
	client.DisableHooks = f.NoHooks
	client.SkipSchemaValidation = skipSchema
	valueOpts := &values.Options{
		ValueFiles: f.ValueFiles, Values: f.Values, StringValues: f.StringValues, JSONValues: f.JSONValues,
		FileValues: f.FileValues, LiteralValues: f.LiteralValues,
	}
	rel, verdict, err := install(f.Args, client, valueOpts, stderr)
	if err != nil {
		if rel != nil {
			return "", verdict, render.RenderFailed(err)
		}
		return "", verdict, err
	}
	if rel == nil {
		return "", verdict, nil
	}
	hooks := make([]render.Hook, 0, len(rel.Hooks))
	for _, h := range rel.Hooks {
		hooks = append(hooks, render.Hook{Path: h.Path, Manifest: h.Manifest, IsTest: isTestHook(h)})
	}
	return render.Output(rel.Manifest, hooks, f), verdict, nil
}

// install is the binary's runInstall for a chart on disk whose dependencies are in place (`helm template`
// without --dependency-update, --devel or --version). With client.SkipSchemaValidation it also says what
// render.Schemas makes of the values that helm rendered with.
func install(args []string, client *action.Install, valueOpts *values.Options, stderr io.Writer) (*release.Release,
	render.Verdict, error) {
	name, chartRef, err := client.NameAndChart(args)
	if err != nil {
		return nil, render.Unknown, err
	}
	client.ReleaseName = name
	path, err := client.LocateChart(chartRef, settings)
	if err != nil {
		return nil, render.Unknown, err
	}
	vals, err := valueOpts.MergeValues(getter.All(settings))
	if err != nil {
		return nil, render.Unknown, err
	}
	requested, err := load(path, stderr)
	if err != nil {
		return nil, render.Unknown, err
	}
	accessor, err := chart.NewAccessor(requested)
	if err != nil {
		return nil, render.Unknown, err
	}
	switch kind := accessor.MetadataAsMap()["Type"]; kind {
	case "", "application":
	default:
		return nil, render.Unknown, render.NotInstallable(kind)
	}
	if accessor.Deprecated() {
		slog.Warn("this chart is deprecated")
	}
	if deps := accessor.MetaDependencies(); len(deps) > 0 {
		if err := sourceDateEpochValid(); err != nil {
			return nil, render.Unknown, err
		}
		if err := action.CheckDependencies(requested, deps); err != nil {
			return nil, render.Unknown, fmt.Errorf("an error occurred while checking for chart dependencies. You may need to run 'helm dependency build' to fetch missing dependencies: %w", err)
		}
	}
	client.Namespace = settings.Namespace()
	result, err := client.RunWithContext(context.Background(), requested, vals)
	verdict := render.Unknown
	if processed, ok := requested.(*chartv2.Chart); ok && result != nil && client.SkipSchemaValidation {
		verdict = schemaVerdict(processed, vals) // the chart as helm processed it for these values
	}
	switch r := result.(type) {
	case nil:
		return nil, verdict, err
	case *release.Release:
		return r, verdict, err
	case release.Release:
		return &r, verdict, err
	}
	return nil, render.Unknown, fmt.Errorf("unsupported release type: %T", result)
}

var (
	charts  render.Charts[chartv2.Chart, *chartv2.Chart]
	schemas = render.Schemas{Compile: compileSchema}
)

// load is loader.Load, with a chart of apiVersion v1 or v2 kept by render.Charts between renders.
func load(path string, stderr io.Writer) (chart.Charter, error) {
	var other chart.Charter // a chart of another API version, loaded afresh each time
	kept, err := charts.Load(path, stderr, func(logs io.Writer) (*chartv2.Chart, error) {
		slog.SetDefault(newLogger(logs))
		defer slog.SetDefault(newLogger(stderr))
		loaded, err := loader.Load(path)
		if v2, ok := loaded.(*chartv2.Chart); ok || err != nil {
			return v2, err
		}
		other = loaded
		return nil, errOtherAPIVersion
	})
	if errors.Is(err, errOtherAPIVersion) {
		return other, nil
	}
	return kept, err
}

var errOtherAPIVersion = errors.New("not a chart of API version v1 or v2")

// schemaVerdict judges the values as util.ToRenderValuesWithSchemaValidation does: coalesced with the chart's.
func schemaVerdict(processed *chartv2.Chart, vals map[string]any) render.Verdict {
	coalesced, err := util.CoalesceValues(processed, vals)
	if err != nil {
		return render.Unknown
	}
	return render.Hold[chartv2.Chart](&schemas, processed, coalesced.AsMap(), (*chartv2.Chart).Name,
		func(c *chartv2.Chart) []byte { return c.Schema })
}

// compileSchema compiles a schema as util.ValidateAgainstSingleSchema does, except that it loads nothing: a
// schema that refers to another document is left to helm.
func compileSchema(schemaJSON []byte) (render.Validator, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, err
	}
	compiler := jsonschema.NewCompiler()
	compiler.UseLoader(noLoader{})
	if err := compiler.AddResource("file:///values.schema.json", doc); err != nil {
		return nil, err
	}
	compiled, err := compiler.Compile("file:///values.schema.json")
	if err != nil {
		return nil, err
	}
	return func(values map[string]any) error { return compiled.Validate(values) }, nil
}

type noLoader struct{}

func (noLoader) Load(url string) (any, error) { return nil, fmt.Errorf("%s: not loaded here", url) }

// sourceDateEpochValid checks $SOURCE_DATE_EPOCH as the binary does before it looks at dependencies.
func sourceDateEpochValid() error {
	text, ok := os.LookupEnv("SOURCE_DATE_EPOCH")
	if !ok || text == "" {
		return nil
	}
	epoch, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return fmt.Errorf("invalid SOURCE_DATE_EPOCH: %w", err)
	}
	if epoch < 0 {
		return errors.New("invalid SOURCE_DATE_EPOCH: must not be negative")
	}
	return nil
}

func isTestHook(h *release.Hook) bool {
	for _, event := range h.Events {
		if event == release.HookTest {
			return true
		}
	}
	return false
}
