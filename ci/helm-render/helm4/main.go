// helm4-render: `helm template` in a long-lived process, with helm.sh/helm/v4 at the version the harness pins
// (go.mod). What a request may ask and what it gets back: ../common/serve.go. Each step below is the one the
// helm binary's template command takes (pkg/cmd/template.go and runInstall in pkg/cmd/install.go, read for the
// facts), through the same exported helm functions, so the output and the error text are the binary's.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/loader"
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
	render.Serve(helmVersion(), os.Getenv("HELM_NAMESPACE"), template)
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

func template(f *render.Flags, stderr io.Writer) (string, error) {
	logger := newLogger(stderr)
	slog.SetDefault(logger)
	settings.SetNamespace(f.Namespace)
	cfg := action.NewConfiguration()
	cfg.SetLogger(logger.Handler())
	client := action.NewInstall(cfg)
	if f.KubeVersion != "" {
		parsed, err := common.ParseKubeVersion(f.KubeVersion)
		if err != nil {
			return "", fmt.Errorf("invalid kube version '%s': %w", f.KubeVersion, err)
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
	client.SkipSchemaValidation = f.SkipSchemaValidation
	valueOpts := &values.Options{
		ValueFiles: f.ValueFiles, Values: f.Values, StringValues: f.StringValues, JSONValues: f.JSONValues,
		FileValues: f.FileValues, LiteralValues: f.LiteralValues,
	}
	rel, err := install(f.Args, client, valueOpts)
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
func install(args []string, client *action.Install, valueOpts *values.Options) (*release.Release, error) {
	name, chartRef, err := client.NameAndChart(args)
	if err != nil {
		return nil, err
	}
	client.ReleaseName = name
	path, err := client.LocateChart(chartRef, settings)
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
	accessor, err := chart.NewAccessor(requested)
	if err != nil {
		return nil, err
	}
	switch kind := accessor.MetadataAsMap()["Type"]; kind {
	case "", "application":
	default:
		return nil, render.NotInstallable(kind)
	}
	if accessor.Deprecated() {
		slog.Warn("this chart is deprecated")
	}
	if deps := accessor.MetaDependencies(); len(deps) > 0 {
		if err := sourceDateEpochValid(); err != nil {
			return nil, err
		}
		if err := action.CheckDependencies(requested, deps); err != nil {
			return nil, fmt.Errorf("an error occurred while checking for chart dependencies. You may need to run 'helm dependency build' to fetch missing dependencies: %w", err)
		}
	}
	client.Namespace = settings.Namespace()
	result, err := client.RunWithContext(context.Background(), requested, vals)
	switch r := result.(type) {
	case nil:
		return nil, err
	case *release.Release:
		return r, err
	case release.Release:
		return &r, err
	}
	return nil, fmt.Errorf("unsupported release type: %T", result)
}

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
