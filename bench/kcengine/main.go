// kcengine times kubeconform's own validation path (github.com/yannh/kubeconform/pkg/validator) with the
// YAML decoding taken out, so bench/validation.py can compare validation alone with ours.
//
// It splits one multi-document file with kubeconform's splitter (resource.SplitYAMLDocument), validates every
// document once to compile and cache the schemas, then times, on one goroutine:
//
//	full:   validator.ValidateResource on every document (decode + validate, what kubeconform -n 1 does)
//	decode: sigs.k8s.io/yaml.UnmarshalStrict on every document (the decode step ValidateResource starts with)
//
// and prints JSON with both; validation alone is full - decode. Usage:
//
//	kcengine -repeat 3 -kubernetes-version 1.35.0 -schema-location TPL [-schema-location TPL] FILE
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/yannh/kubeconform/pkg/resource"
	"github.com/yannh/kubeconform/pkg/validator"
	"sigs.k8s.io/yaml"
)

type locations []string

func (l *locations) String() string     { return strings.Join(*l, ",") }
func (l *locations) Set(v string) error { *l = append(*l, v); return nil }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func main() {
	var locs locations
	flag.Var(&locs, "schema-location", "schema location template (repeatable)")
	version := flag.String("kubernetes-version", "1.35.0", "Kubernetes version")
	repeat := flag.Int("repeat", 3, "timed passes")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: kcengine [flags] FILE")
		os.Exit(2)
	}
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Split the stream with kubeconform's own splitter, synchronously (its FromStream hands out slices of a
	// scanner buffer that the next Scan overwrites, which only works when each is consumed at once).
	var docs []resource.Resource
	scanner := bufio.NewScanner(bytes.NewReader(data))
	scanner.Buffer(make([]byte, 4*1024*1024), 256*1024*1024)
	scanner.Split(resource.SplitYAMLDocument)
	for scanner.Scan() {
		if len(bytes.TrimSpace(scanner.Bytes())) > 0 {
			docs = append(docs, resource.Resource{Path: flag.Arg(0), Bytes: append([]byte(nil), scanner.Bytes()...)})
		}
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	v, err := validator.New(locs, validator.Opts{KubernetesVersion: *version, Strict: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	start := time.Now()
	invalid := 0
	for _, d := range docs {
		res := v.ValidateResource(d)
		if res.Status == validator.Error {
			fmt.Fprintln(os.Stderr, res.Err)
			os.Exit(1)
		}
		if res.Status != validator.Valid {
			invalid++
		}
	}
	first := time.Since(start).Seconds()
	var full, decode []float64
	for i := 0; i < *repeat; i++ {
		t := time.Now()
		for _, d := range docs {
			v.ValidateResource(d)
		}
		full = append(full, time.Since(t).Seconds())
		t = time.Now()
		for _, d := range docs {
			var m map[string]interface{}
			if err := yaml.UnmarshalStrict(d.Bytes, &m); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		}
		decode = append(decode, time.Since(t).Seconds())
	}
	out, _ := json.Marshal(map[string]interface{}{
		"objects": len(docs), "invalid": invalid, "first_pass": first,
		"full": full, "decode": decode, "validate": median(full) - median(decode),
	})
	fmt.Println(string(out))
}
