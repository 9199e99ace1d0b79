// Custom resources as the apiextensions server judges them: the CustomResourceDefinitions in force arrive as one
// request, {"crds": [CRD, ...]}, checked as a create of each would be (an invalid one is not registered, its errors
// come back), and replace those registered before. A custom resource of a registered CRD's served version is then
// decoded as the custom resource handler decodes it (pruning to the structural schema, defaults) and created with
// the handler's own strategy (k8s.io/apiextensions-apiserver/pkg/registry/customresource): metadata, the OpenAPI
// schema (kube-openapi's validator), embedded resources, x-kubernetes-list-type map/set uniqueness and the
// x-kubernetes-validations (CEL) rules with the API server's cost budget.
package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage/names"
)

var (
	crdScheme = runtime.NewScheme()
	crdCodecs = serializer.NewCodecFactory(crdScheme)
	// registered: each served version of each CustomResourceDefinition in force, by group, version and kind. It is
	// replaced only while no other request is being judged (main waits for those in flight).
	registered = map[schema.GroupVersionKind]*crVersion{}
)

func init() {
	install.Install(crdScheme)
}

// crVersion is what the custom resource handler keeps for one served version of a CRD.
type crVersion struct {
	crd                   string // the CRD's name, for messages
	resource              string // its plural
	strategy              rest.RESTCreateStrategy
	structural            *structuralschema.Structural
	preserveUnknownFields bool
}

type crdVerdict struct {
	Name   string    `json:"name"`
	Errors []problem `json:"errors,omitempty"`
}

// registerCRDs answers {"crds": [...]}: each CRD judged as its create would be, the valid ones in force from now on
// (in place of those registered before), the invalid ones with their errors.
func registerCRDs(line []byte) reply {
	var request struct {
		CRDs []json.RawMessage `json:"crds"`
	}
	if err := json.Unmarshal(line, &request); err != nil {
		return refused(err.Error())
	}
	out := reply{Known: true, CRDs: []crdVerdict{}}
	next := map[schema.GroupVersionKind]*crVersion{}
	for _, raw := range request.CRDs {
		name, versions, errs := customResourceDefinition(raw)
		if len(errs) == 0 {
			for gvk, version := range versions {
				next[gvk] = version
			}
		}
		out.CRDs = append(out.CRDs, crdVerdict{Name: name, Errors: errs})
	}
	registered = next
	return out
}

// customResourceDefinition decodes one CRD as the API server does (apiextensions.k8s.io/v1, defaults, the internal
// version), validates its create with the CRD registry strategy, and builds what the custom resource handler builds
// for each served version: the structural schema (defaults pruned), the OpenAPI validator and the strategy.
func customResourceDefinition(raw []byte) (string, map[schema.GroupVersionKind]*crVersion, []problem) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &head)
	name := head.Metadata.Name
	if head.APIVersion != apiextensionsv1.SchemeGroupVersion.String() {
		return name, nil, []problem{{Field: "apiVersion", Message: fmt.Sprintf(
			"Unsupported value: %q: supported values: %q", head.APIVersion, apiextensionsv1.SchemeGroupVersion.String())}}
	}
	obj, _, err := crdCodecs.UniversalDecoder().Decode(raw, nil, nil)
	if err != nil {
		return name, nil, []problem{{Message: err.Error()}}
	}
	internal, ok := obj.(*apiextensions.CustomResourceDefinition)
	if !ok {
		return name, nil, []problem{{Message: fmt.Sprintf("not a CustomResourceDefinition: %T", obj)}}
	}
	rest.FillObjectMetaSystemFields(internal)
	strategy := customresourcedefinition.NewStrategy(crdScheme)
	ctx := requestContext(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"),
		"customresourcedefinitions", false, internal, "create")
	if errs := verdict(rest.BeforeCreate(strategy, ctx, internal)).Errors; len(errs) > 0 {
		return name, nil, errs
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := crdScheme.Convert(internal, crd, nil); err != nil {
		return name, nil, []problem{{Message: err.Error()}}
	}
	versions := map[schema.GroupVersionKind]*crVersion{}
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		version, err := servedVersion(crd, v)
		if err != nil {
			return name, nil, []problem{{Field: "spec.versions", Message: fmt.Sprintf("%s: %v", v.Name, err)}}
		}
		versions[schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = version
	}
	return name, versions, nil
}

// servedVersion is the custom resource handler's set-up of one version (getOrCreateServingInfoFor).
func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, v apiextensionsv1.CustomResourceDefinitionVersion) (*crVersion, error) {
	validation, err := apihelpers.GetSchemaForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	var props *apiextensions.JSONSchemaProps
	var structural *structuralschema.Structural
	if validation != nil {
		internal := &apiextensions.CustomResourceValidation{}
		if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(validation, internal, nil); err != nil {
			return nil, err
		}
		props = internal.OpenAPIV3Schema
		if structural, err = structuralschema.NewStructural(props); err != nil {
			return nil, err
		}
		structural = structural.DeepCopy()
		if err := structuraldefaulting.PruneDefaults(structural); err != nil {
			return nil, err
		}
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(props)
	if err != nil {
		return nil, err
	}
	subresources, err := apihelpers.GetSubresourcesForVersion(crd, v.Name)
	if err != nil {
		return nil, err
	}
	var status *apiextensions.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	var scale *apiextensions.CustomResourceSubresourceScale
	if subresources != nil && subresources.Status != nil {
		status = &apiextensions.CustomResourceSubresourceStatus{}
		if props != nil && props.Properties != nil {
			if statusSchema, ok := props.Properties["status"]; ok {
				if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&statusSchema); err != nil {
					return nil, err
				}
			}
		}
	}
	if subresources != nil && subresources.Scale != nil {
		scale = &apiextensions.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subresources.Scale, scale, nil); err != nil {
			return nil, err
		}
	}
	gvk := schema.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}
	return &crVersion{
		crd:      crd.Name,
		resource: crd.Spec.Names.Plural,
		strategy: newStrategy(unstructuredscheme.NewUnstructuredObjectTyper(),
			crd.Spec.Scope == apiextensionsv1.NamespaceScoped, gvk, validator, statusValidator, structural, status, scale),
		structural:            structural,
		preserveUnknownFields: crd.Spec.PreserveUnknownFields,
	}, nil
}

// newStrategy calls customresource.NewStrategy with these arguments, and the zero value for any parameter beyond them:
// the same source builds at the oldest supported minor too, and Kubernetes 1.30 added one (the selectable fields,
// which serve field selectors on lists, not validation).
func newStrategy(args ...any) rest.RESTCreateStrategy {
	fn := reflect.ValueOf(customresource.NewStrategy)
	in := make([]reflect.Value, fn.Type().NumIn())
	for i := range in {
		value := reflect.Zero(fn.Type().In(i))
		if i < len(args) && args[i] != nil {
			value = reflect.ValueOf(args[i])
		}
		in[i] = value
	}
	return fn.Call(in)[0].Interface().(rest.RESTCreateStrategy)
}

// registeredFor is the served version of a registered CRD for a custom resource's group, version and kind; nil when
// no CRD of that group and kind is in force, and a refusal when one is but does not serve the version.
func registeredFor(gvk schema.GroupVersionKind) (*crVersion, *reply) {
	if version, ok := registered[gvk]; ok {
		return version, nil
	}
	var served []string
	crd := ""
	for other, version := range registered {
		if other.GroupKind() == gvk.GroupKind() {
			served, crd = append(served, other.Version), version.crd
		}
	}
	if crd == "" {
		return nil, nil
	}
	sort.Strings(served)
	out := refused(fmt.Sprintf("the server could not find the requested resource: CustomResourceDefinition %s serves "+
		"%s in versions %s, not %s", crd, gvk.Kind, strings.Join(served, ", "), gvk.Version))
	return nil, &out
}

// createCustomResource judges the create of a custom resource of a registered CRD version: decoded as the handler's
// schema-coercing decoder does (unknown fields pruned, as without fieldValidation=Strict; nulls without a default
// dropped; embedded ObjectMeta coerced; defaults applied), then rest.BeforeCreate with the version's strategy.
func createCustomResource(version *crVersion, gvk schema.GroupVersionKind, line []byte) reply {
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(line); err != nil {
		return refused(err.Error())
	}
	objectMeta, _, _, err := schemaobjectmeta.GetObjectMetaWithOptions(obj.Object, schemaobjectmeta.ObjectMetaOptions{})
	if err != nil {
		return refused(err.Error())
	}
	if version.structural != nil {
		if !version.preserveUnknownFields {
			structuralpruning.PruneWithOptions(obj.Object, version.structural, true, structuralschema.UnknownFieldPathOptions{})
			structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj.Object, version.structural)
		}
		if err, _ := schemaobjectmeta.CoerceWithOptions(nil, obj.Object, version.structural, false, schemaobjectmeta.CoerceOptions{}); err != nil {
			return verdict(fieldError(gvk, obj.GetName(), err))
		}
		structuraldefaulting.Default(obj.Object, version.structural)
	}
	obj.SetAPIVersion(gvk.GroupVersion().String())
	obj.SetKind(gvk.Kind)
	if objectMeta != nil {
		if err := schemaobjectmeta.SetObjectMeta(obj.Object, objectMeta); err != nil {
			return refused(err.Error())
		}
	}
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return refused(err.Error())
	}
	if accessor.GetName() == "" && accessor.GetGenerateName() != "" {
		accessor.SetName(names.SimpleNameGenerator.GenerateName(accessor.GetGenerateName()))
	}
	rest.FillObjectMetaSystemFields(accessor)
	ctx := requestContext(gvk, version.resource, version.strategy.NamespaceScoped(), accessor, "create")
	return verdict(rest.BeforeCreate(version.strategy, ctx, obj))
}

// fieldError is one field's error as the API server's Invalid status carries it.
func fieldError(gvk schema.GroupVersionKind, name string, err *field.Error) error {
	return apierrors.NewInvalid(gvk.GroupKind(), name, field.ErrorList{err})
}
