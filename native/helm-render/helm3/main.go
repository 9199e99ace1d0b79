// helm3-render: `helm template` in a long-lived process, with helm.sh/helm/v3 at the version the harness pins
// (go.mod). What a request may ask and what it gets back: ../common/serve.go. Each step below is the one the
// helm binary's template command takes (cmd/helm/template.go and runInstall in cmd/helm/install.go, read for
// the facts), through the same exported helm functions, so the output and the error text are the binary's.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/debug"

	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/cli"
	"helm.sh/helm/v3/pkg/cli/values"
	"helm.sh/helm/v3/pkg/getter"
	"helm.sh/helm/v3/pkg/release"

	render "dlcharts.local/helm-render/common"
)

var settings = cli.New()

func main() {
	if settings.Debug {
		fmt.Fprintln(os.Stderr, "helm3-render: HELM_DEBUG is set; the helm binary prints more with it than the server does")
		os.Exit(2)
	}
	log.SetFlags(log.Lshortfile) // the binary's log lines start with the file and line ("walk.go:75: ...")
	render.Serve(helmVersion(), os.Getenv("HELM_NAMESPACE"), render.SchemasFirst(templateWith))
}

// helmVersion is the version of the helm module linked in, as `helm version` prints it (v3.18.0).
func helmVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "helm.sh/helm/v3" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// templateWith renders as `helm template` does (render.TemplateWith).
func templateWith(f *render.Flags, stderr io.Writer, skipSchema bool) (string, render.Verdict, error) {
	log.SetOutput(stderr)
	settings.SetNamespace(f.Namespace)
	cfg := &action.Configuration{Log: func(string, ...interface{}) {}} // the binary's debug(): silent without --debug
	client := action.NewInstall(cfg)
	if f.KubeVersion != "" {
		parsed, err := chartutil.ParseKubeVersion(f.KubeVersion)
		if err != nil {
			return "", render.Unknown, fmt.Errorf("invalid kube version '%s': %s", f.KubeVersion, err)
		}
		client.KubeVersion = parsed
	}
	client.DryRunOption = "true"
	client.DryRun = true
	client.ReleaseName = "release-name"
	client.Replace = true
	client.ClientOnly = true
	client.APIVersions = chartutil.VersionSet(f.APIVersions)
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
	path, err := client.ChartPathOptions.LocateChart(chartRef, settings)
	if err != nil {
		return nil, render.Unknown, err
	}
	vals, err := valueOpts.MergeValues(getter.All(settings))
	if err != nil {
		return nil, render.Unknown, err
	}
	requested, err := charts.Load(path, stderr, func(logs io.Writer) (*chart.Chart, error) {
		log.SetOutput(logs)
		defer log.SetOutput(stderr)
		return loader.Load(path)
	})
	if err != nil {
		return nil, render.Unknown, err
	}
	switch requested.Metadata.Type {
	case "", "application":
	default:
		return nil, render.Unknown, render.NotInstallable(requested.Metadata.Type)
	}
	if requested.Metadata.Deprecated {
		fmt.Fprintln(stderr, "WARNING: This chart is deprecated")
	}
	if deps := requested.Metadata.Dependencies; deps != nil {
		if err := action.CheckDependencies(requested, deps); err != nil {
			return nil, render.Unknown, fmt.Errorf("An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: %w", err)
		}
	}
	client.Namespace = settings.Namespace()
	rel, err := client.RunWithContext(context.Background(), requested, vals)
	verdict := render.Unknown
	if rel != nil && client.SkipSchemaValidation {
		verdict = schemaVerdict(requested, vals) // the chart as helm processed it for these values
	}
	return rel, verdict, err
}

var (
	charts  render.Charts[chart.Chart, *chart.Chart]
	schemas = render.Schemas{Compile: compileSchema}
)

// schemaVerdict judges the values as chartutil.ToRenderValues does: coalesced with the chart's.
func schemaVerdict(processed *chart.Chart, vals map[string]interface{}) render.Verdict {
	coalesced, err := chartutil.CoalesceValues(processed, vals)
	if err != nil {
		return render.Unknown
	}
	return render.Hold[chart.Chart](&schemas, processed, coalesced.AsMap(), (*chart.Chart).Name,
		func(c *chart.Chart) []byte { return c.Schema })
}

// compileSchema compiles a schema as chartutil.ValidateAgainstSingleSchema does (gojsonschema.Validate compiles
// its schema loader first), and validates values as it does: marshalled to YAML, then converted to JSON.
func compileSchema(schemaJSON []byte) (render.Validator, error) {
	compiled, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schemaJSON))
	if err != nil {
		return nil, err
	}
	return func(values map[string]any) error {
		valuesData, err := yaml.Marshal(values)
		if err != nil {
			return err
		}
		valuesJSON, err := yaml.YAMLToJSON(valuesData)
		if err != nil {
			return err
		}
		if bytes.Equal(valuesJSON, []byte("null")) {
			valuesJSON = []byte("{}")
		}
		result, err := compiled.Validate(gojsonschema.NewBytesLoader(valuesJSON))
		if err != nil {
			return err
		}
		if !result.Valid() {
			return errors.New("values do not meet the schema")
		}
		return nil
	}, nil
}

func isTestHook(h *release.Hook) bool {
	for _, event := range h.Events {
		if event == release.HookTest {
			return true
		}
	}
	return false
}
