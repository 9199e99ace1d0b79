// k8s-validate: the API server's own create validation for built-in kinds, offline.
//
// It links the pinned k8s.io/kubernetes (the version the embedded control plane runs) and answers each request
// the way a create does before anything is stored: decode (defaulting and conversion to the internal version),
// then rest.BeforeCreate with the kind's registry strategy (PrepareForCreate, Validate, object metadata). What it
// leaves out is admission (Pod Security, quotas, webhooks) and everything that needs other objects.
//
// Protocol (dlcharts.apirules): one JSON object per line on stdin (or {"old": OBJECT, "new": OBJECT}: an update
// from the object as stored, rest.BeforeUpdate with the kind's update validation), one reply per line on stdout:
//
//	{"known": false, "errors": [...]}                 a kind without a strategy here: its metadata judged alone
//	{"known": true, "errors": [{"field": "...", "message": "..."}]}   no errors: accepted
//
// A line {"crds":[CustomResourceDefinition, ...]} (compact JSON: the line starts with {"crds":) puts those CRDs in
// force in place of the ones before (crd.go), once every request before it is answered; its reply lists each CRD's
// errors (an invalid one is not registered):
//
//	{"known": true, "crds": [{"name": "...", "errors": [...]}]}
//
// From then on a custom resource of a served version of one of them is created with the apiextensions server's own
// strategy ("known": true): its schema, list-type map/set keys and x-kubernetes-validations (CEL) rules.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	goruntime "runtime"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	"k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	"k8s.io/kubernetes/pkg/registry/scheduling/priorityclass"
)

// kinds: each built-in kind's registry strategy, and its resource (the request info the strategies' declarative
// validation reads, as the API server's handler sets it).
var kinds = map[schema.GroupKind]struct {
	strategy rest.RESTCreateStrategy
	resource string
}{
	{Group: "", Kind: "ConfigMap"}:                            {configmap.Strategy, "configmaps"},
	{Group: "", Kind: "PersistentVolumeClaim"}:                {persistentvolumeclaim.Strategy, "persistentvolumeclaims"},
	{Group: "", Kind: "Pod"}:                                  {pod.Strategy, "pods"},
	{Group: "", Kind: "Secret"}:                               {secret.Strategy, "secrets"},
	{Group: "", Kind: "Service"}:                              {service.Strategy, "services"},
	{Group: "", Kind: "ServiceAccount"}:                       {serviceaccount.Strategy, "serviceaccounts"},
	{Group: "apps", Kind: "DaemonSet"}:                        {daemonset.Strategy, "daemonsets"},
	{Group: "apps", Kind: "Deployment"}:                       {deployment.Strategy, "deployments"},
	{Group: "apps", Kind: "StatefulSet"}:                      {statefulset.Strategy, "statefulsets"},
	{Group: "batch", Kind: "CronJob"}:                         {cronjob.Strategy, "cronjobs"},
	{Group: "batch", Kind: "Job"}:                             {job.Strategy, "jobs"},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:       {networkpolicy.Strategy, "networkpolicies"},
	{Group: "policy", Kind: "PodDisruptionBudget"}:            {poddisruptionbudget.Strategy, "poddisruptionbudgets"},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:        {role.Strategy, "roles"},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: {rolebinding.Strategy, "rolebindings"},
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:       {priorityclass.Strategy, "priorityclasses"},
}

type problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

type reply struct {
	Known  bool         `json:"known"`
	Errors []problem    `json:"errors,omitempty"`
	CRDs   []crdVerdict `json:"crds,omitempty"`
}

func check(line []byte) reply {
	if bytes.HasPrefix(line, []byte(`{"old":`)) {
		return checkUpdate(line)
	}
	// One decode, as the API server's: the JSON into the kind's versioned type (a custom resource's kind is not
	// registered here), defaults, and conversion to the internal version.
	obj, gvk, err := legacyscheme.Codecs.UniversalDecoder().Decode(line, nil, nil)
	if gvk == nil { // not a JSON object with apiVersion and kind
		return refused(fmt.Sprint(err))
	}
	kind, ok := kinds[gvk.GroupKind()]
	if !ok || runtime.IsNotRegisteredError(err) {
		if version, notServed := registeredFor(*gvk); version != nil {
			return createCustomResource(version, *gvk, line)
		} else if notServed != nil {
			return *notServed
		}
		return customResource(line)
	}
	if err != nil { // e.g. a quantity that does not parse: the API server answers 400 "cannot be handled as a ..."
		return refused(err.Error())
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return refused(err.Error())
	}
	rest.FillObjectMetaSystemFields(accessor)
	if svc, isService := obj.(*core.Service); isService {
		allocate(svc)
	}
	ctx := requestContext(*gvk, kind.resource, kind.strategy.NamespaceScoped(), accessor, "create")
	return verdict(rest.BeforeCreate(kind.strategy, ctx, obj))
}

// checkUpdate answers {"old": OBJECT, "new": OBJECT}: the API server's validation of an update (a PUT) from the
// object as stored to the one sent, immutable fields included, before anything is stored.
func checkUpdate(line []byte) reply {
	var request struct {
		Old json.RawMessage `json:"old"`
		New json.RawMessage `json:"new"`
	}
	if err := json.Unmarshal(line, &request); err != nil {
		return refused(err.Error())
	}
	decoder := legacyscheme.Codecs.UniversalDecoder()
	old, gvk, err := decoder.Decode(request.Old, nil, nil)
	if gvk == nil {
		return refused(fmt.Sprint("the stored object: ", err))
	}
	kind, ok := kinds[gvk.GroupKind()]
	strategy, updatable := kind.strategy.(rest.RESTUpdateStrategy)
	if !ok || !updatable || runtime.IsNotRegisteredError(err) {
		return customResource(request.New)
	}
	if err != nil {
		return refused(fmt.Sprint("the stored object: ", err))
	}
	obj, _, err := decoder.Decode(request.New, gvk, nil)
	if err != nil {
		return refused(err.Error())
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return refused(err.Error())
	}
	if accessor.GetResourceVersion() == "" { // an unconditional update: the store takes the stored object's version
		stored, _ := meta.Accessor(old)
		accessor.SetResourceVersion(stored.GetResourceVersion())
	}
	if svc, isService := obj.(*core.Service); isService {
		allocate(svc)
	}
	ctx := requestContext(*gvk, kind.resource, strategy.NamespaceScoped(), accessor, "update")
	return verdict(rest.BeforeUpdate(strategy, ctx, obj, old))
}

// requestContext is what the API server's handler gives a strategy: the namespace and the request info.
func requestContext(gvk schema.GroupVersionKind, resource string, namespaced bool, object metav1.Object, verb string) context.Context {
	namespace := object.GetNamespace()
	if namespace == "" && namespaced {
		namespace = "default"
		object.SetNamespace(namespace)
	}
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	return genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: gvk.Group, APIVersion: gvk.Version,
		Namespace: namespace, Resource: resource, Name: object.GetName(),
	})
}

// refused is a reply with one error that names no field (a decode that failed, a strategy's plain error).
func refused(message string) reply {
	return reply{Known: true, Errors: []problem{{Message: message}}}
}

// verdict turns a strategy's error into the reply: each cause with its field, as the API server's Status lists them.
func verdict(err error) reply {
	if err == nil {
		return reply{Known: true}
	}
	status, isStatus := err.(apierrors.APIStatus)
	if !isStatus || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return refused(err.Error())
	}
	out := reply{Known: true}
	for _, cause := range status.Status().Details.Causes {
		out.Errors = append(out.Errors, problem{Field: cause.Field, Message: cause.Message})
	}
	return out
}

// customResource judges the metadata of an object of a kind without a strategy here (a custom resource) as the
// apiextensions server does (namespaced, name a DNS subdomain); its spec is left to the CRD's schema.
func customResource(line []byte) reply {
	var obj unstructured.Unstructured
	if err := obj.UnmarshalJSON(line); err != nil {
		return reply{Known: false, Errors: []problem{{Message: err.Error()}}}
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	out := reply{Known: false}
	for _, e := range apivalidation.ValidateObjectMetaAccessor(&obj, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata")) {
		out.Errors = append(out.Errors, problem{Field: e.Field, Message: e.ErrorBody()})
	}
	return out
}

// allocate does for a Service what the API server's service storage does before it validates a create (its
// BeginCreate): the cluster IPs from clusterIP (a headless Service keeps "None"), the IP family and policy of a
// single-stack IPv4 cluster, and a node port for every port of a NodePort or LoadBalancer Service that names none.
func allocate(svc *core.Service) {
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" { // every type: an ExternalName one is refused
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.Type == core.ServiceTypeExternalName {
		return
	}
	if len(svc.Spec.ClusterIPs) == 0 {
		svc.Spec.ClusterIP = "10.96.0.10"
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []core.IPFamily{core.IPv4Protocol}
	}
	if svc.Spec.IPFamilyPolicy == nil {
		policy := core.IPFamilyPolicySingleStack
		svc.Spec.IPFamilyPolicy = &policy
	}
	if svc.Spec.Type == core.ServiceTypeNodePort || svc.Spec.Type == core.ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].NodePort == 0 {
				svc.Spec.Ports[i].NodePort = int32(30000 + i)
			}
		}
	}
}

func answer(line []byte) []byte {
	return encode(check(line))
}

func encode(r reply) []byte {
	out, err := json.Marshal(r)
	if err != nil {
		out = []byte(fmt.Sprintf(`{"known":true,"errors":[{"message":%q}]}`, err.Error()))
	}
	return append(out, '\n')
}

func main() {
	// --allow-privileged=true, as kubeadm, kind and kwokctl (the embedded cluster) start the API server
	capabilities.Setup(true, 0)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	// A whole render arrives at once (dlcharts.apirules writes every object before it reads): its objects are
	// judged on every core, as the API server judges concurrent requests, and answered in their order.
	jobs := make(chan func(), 256)
	for i := 0; i < goruntime.GOMAXPROCS(0); i++ {
		go func() {
			for job := range jobs {
				job()
			}
		}()
	}
	answers := make(chan chan []byte, 4096)
	written := make(chan struct{})
	go func() {
		out := bufio.NewWriterSize(os.Stdout, 1<<20)
		for next := range answers {
			out.Write(<-next)
			if len(answers) == 0 { // nothing more is waiting: send what there is
				out.Flush()
			}
		}
		out.Flush()
		close(written)
	}()
	var inFlight sync.WaitGroup
	for in.Scan() {
		line, next := append([]byte(nil), in.Bytes()...), make(chan []byte, 1)
		answers <- next
		if bytes.HasPrefix(line, []byte(`{"crds":`)) { // the CRDs in force change between requests, not during one
			inFlight.Wait()
			next <- encode(registerCRDs(line))
			continue
		}
		inFlight.Add(1)
		jobs <- func() { defer inFlight.Done(); next <- answer(line) }
	}
	close(jobs)
	close(answers)
	<-written
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "k8s-validate:", err)
		os.Exit(1)
	}
}
