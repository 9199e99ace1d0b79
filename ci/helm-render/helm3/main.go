// helm3-render: `helm template` in a long-lived process, with helm.sh/helm/v3 at the version the harness pins
// (go.mod). What a request may ask and what it gets back: ../common/serve.go. Each step below is the one the
// helm binary's template command takes (cmd/helm/template.go and runInstall in cmd/helm/install.go, read for
// the facts), through the same exported helm functions, so the output and the error text are the binary's.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"runtime/debug"

	"helm.sh/helm/v3/pkg/action"
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
	render.Serve(helmVersion(), os.Getenv("HELM_NAMESPACE"), template)
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

func template(f *render.Flags, stderr io.Writer) (string, error) {
	log.SetOutput(stderr)
	settings.SetNamespace(f.Namespace)
	cfg := &action.Configuration{Log: func(string, ...interface{}) {}} // the binary's debug(): silent without --debug
	client := action.NewInstall(cfg)
	if f.KubeVersion != "" {
		parsed, err := chartutil.ParseKubeVersion(f.KubeVersion)
		if err != nil {
			return "", fmt.Errorf("invalid kube version '%s': %s", f.KubeVersion, err)
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
	client.SkipSchemaValidation = f.SkipSchemaValidation
	valueOpts := &values.Options{
		ValueFiles: f.ValueFiles, Values: f.Values, StringValues: f.StringValues, JSONValues: f.JSONValues,
		FileValues: f.FileValues, LiteralValues: f.LiteralValues,
	}
	rel, err := install(f.Args, client, valueOpts, stderr)
	if err != nil {
		if rel != nil {
			return "", render.RenderFailed(err)
		}
		return "", err
	}
	if rel == nil {
		return "", nil
	}
	hooks := make([]render.Hook, 0, len(rel.Hooks))
	for _, h := range rel.Hooks {
		hooks = append(hooks, render.Hook{Path: h.Path, Manifest: h.Manifest, IsTest: isTestHook(h)})
	}
	return render.Output(rel.Manifest, hooks, f), nil
}

// install is the binary's runInstall for a chart on disk whose dependencies are in place (`helm template`
// without --dependency-update, --devel or --version).
func install(args []string, client *action.Install, valueOpts *values.Options, stderr io.Writer) (*release.Release, error) {
	name, chartRef, err := client.NameAndChart(args)
	if err != nil {
		return nil, err
	}
	client.ReleaseName = name
	path, err := client.ChartPathOptions.LocateChart(chartRef, settings)
	if err != nil {
		return nil, err
	}
	vals, err := valueOpts.MergeValues(getter.All(settings))
	if err != nil {
		return nil, err
	}
	requested, err := loader.Load(path)
	if err != nil {
		return nil, err
	}
	switch requested.Metadata.Type {
	case "", "application":
	default:
		return nil, render.NotInstallable(requested.Metadata.Type)
	}
	if requested.Metadata.Deprecated {
		fmt.Fprintln(stderr, "WARNING: This chart is deprecated")
	}
	if deps := requested.Metadata.Dependencies; deps != nil {
		if err := action.CheckDependencies(requested, deps); err != nil {
			return nil, fmt.Errorf("An error occurred while checking for chart dependencies. You may need to run `helm dependency build` to fetch missing dependencies: %w", err)
		}
	}
	client.Namespace = settings.Namespace()
	return client.RunWithContext(context.Background(), requested, vals)
}

func isTestHook(h *release.Hook) bool {
	for _, event := range h.Events {
		if event == release.HookTest {
			return true
		}
	}
	return false
}
