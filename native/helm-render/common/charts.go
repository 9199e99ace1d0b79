package render

// Loading a chart (reading its folder, parsing Chart.yaml and values.yaml, following the charts/ links) is a
// tenth of a render, and a test run renders each chart hundreds of times. Charts keeps each chart as loaded, with
// the stamp of every file under its path, and hands each render a private deep copy: helm changes the chart it
// renders (it drops disabled subcharts and merges imported values into it). A file's stamp is what the harness's
// render cache trusts (dlcharts.render.chart_digest): its size, modification and change times and inode.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
)

// Chart is a loaded chart of one helm major (*chart.Chart of helm.sh/helm/v3, *v2.Chart of helm.sh/helm/v4).
type Chart[C any] interface {
	*C
	Dependencies() []*C
	SetDependencies(charts ...*C)
}

// keptEntries bounds each cache of a long-lived server (charts, compiled schemas): past it, what was kept is let go
// and built again as used, so a session that renders many chart copies, or edits a schema often, does not grow it.
const keptEntries = 64

// keep puts value under key in *cache, emptying the cache first when it holds keptEntries already.
func keep[K comparable, V any](cache *map[K]V, key K, value V) {
	if *cache == nil || len(*cache) >= keptEntries {
		*cache = map[K]V{}
	}
	(*cache)[key] = value
}

// Charts caches the charts of one helm major.
type Charts[C any, P Chart[C]] struct {
	mu      sync.Mutex
	entries map[string]loaded[C]
}

type loaded[C any] struct {
	stamp string
	chart *C
	logs  string // what loading it logged; said again on each render, as the binary says it on each run
}

// Load returns a copy of the chart at path, loading it with load (which logs to its writer) when it is not
// cached or its files changed. What the load logged goes to stderr, on every call.
func (c *Charts[C, P]) Load(path string, stderr io.Writer, load func(logs io.Writer) (*C, error)) (*C, error) {
	stamp, err := stampTree(path)
	if err != nil {
		return load(stderr) // helm's loader says what is wrong with the path
	}
	c.mu.Lock()
	entry, ok := c.entries[path]
	c.mu.Unlock()
	if !ok || entry.stamp != stamp {
		var logs strings.Builder
		chart, err := load(&logs)
		io.WriteString(stderr, logs.String())
		if err != nil {
			return nil, err
		}
		entry = loaded[C]{stamp, chart, logs.String()}
		c.mu.Lock()
		keep(&c.entries, path, entry)
		c.mu.Unlock()
	} else {
		io.WriteString(stderr, entry.logs)
	}
	return copyChart[C, P](entry.chart), nil
}

// copyChart copies every exported field of a chart deeply (its Chart.yaml, values, templates and files) and its
// subcharts, which it links to the copy with SetDependencies.
func copyChart[C any, P Chart[C]](chart *C) *C {
	out := new(C)
	*out = *chart
	deepCopyFields(reflect.ValueOf(out).Elem())
	subcharts := P(chart).Dependencies()
	copies := make([]*C, len(subcharts))
	for i, sub := range subcharts {
		copies[i] = copyChart[C, P](sub)
	}
	P(out).SetDependencies(copies...)
	return out
}

// deepCopyFields replaces each exported field of the struct v with a deep copy of its value. Unexported fields
// keep the shallow copy's value (a time.Time's, say); a chart's own links are reset by copyChart.
func deepCopyFields(v reflect.Value) {
	for i := range v.NumField() {
		if v.Type().Field(i).IsExported() {
			v.Field(i).Set(deepCopy(v.Field(i)))
		}
	}
}

func deepCopy(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(deepCopy(v.Elem()))
		return out
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(deepCopy(v.Elem()))
		return out
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeMapWithSize(v.Type(), v.Len())
		for iter := v.MapRange(); iter.Next(); {
			out.SetMapIndex(iter.Key(), deepCopy(iter.Value()))
		}
		return out
	case reflect.Slice:
		if v.IsNil() {
			return v
		}
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		if holdsNoReferences(v.Type().Elem().Kind()) {
			reflect.Copy(out, v) // a file's bytes, say
			return out
		}
		for i := range v.Len() {
			out.Index(i).Set(deepCopy(v.Index(i)))
		}
		return out
	case reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		out.Set(v)
		deepCopyFields(out)
		return out
	}
	return v
}

func holdsNoReferences(kind reflect.Kind) bool {
	return kind >= reflect.Bool && kind <= reflect.Complex128 || kind == reflect.String
}

// stampTree stamps every file under path (a chart folder, following links as helm's loader does, or an archive)
// with its name, size, modification and change times and inode.
func stampTree(path string) (string, error) {
	var stamps strings.Builder
	err := stampInto(&stamps, path, "", 0)
	return stamps.String(), err
}

func stampInto(stamps *strings.Builder, path, name string, depth int) error {
	if depth > 32 {
		return fmt.Errorf("%s: links nest too deep", path)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return err
	}
	modified, changed := fileTimes(&st)
	fmt.Fprintf(stamps, "%q %o %d %d.%d %d.%d %d\n", name, st.Mode, st.Size, modified.Sec, modified.Nsec, changed.Sec,
		changed.Nsec, st.Ino)
	if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil
	}
	entries, err := os.ReadDir(path) // sorted by name
	if err != nil {
		return err
	}
	for _, entry := range entries {
		if err := stampInto(stamps, filepath.Join(path, entry.Name()), name+"/"+entry.Name(), depth+1); err != nil {
			return err
		}
	}
	return nil
}
