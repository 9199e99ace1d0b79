// The part of the render server that does not depend on the helm version (see ci/build-control-plane.sh).
// Its requirements are the versions both pinned helms already select, so it changes nothing they build with.
module dlcharts.local/helm-render/common

go 1.24.0

require (
	github.com/spf13/pflag v1.0.6
	gopkg.in/yaml.v3 v3.0.1
)
