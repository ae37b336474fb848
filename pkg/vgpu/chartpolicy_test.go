package vgpu

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"text/template"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/cel/environment"
	"sigs.k8s.io/yaml"
)

// chartPolicyNamed renders the chart's admission policies with the chart's default values
// and returns the one whose name ends in suffix. The template functions are only as much of
// Helm's as the file uses.
func chartPolicyNamed(t *testing.T, suffix string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	t.Helper()
	funcs := template.FuncMap{
		"include": func(name string, _ any) string {
			if strings.HasSuffix(name, ".labels") {
				return "{}"
			}
			return "vv"
		},
		"nindent": func(n int, s string) string { return "\n" + strings.Repeat(" ", n) + s },
		"list":    func(v ...any) []any { return v },
		"concat":  func(a, b []any) []any { return append(append([]any{}, a...), b...) },
		"uniq":    func(v []any) []any { return slices.CompactFunc(v, func(a, b any) bool { return a == b }) },
		"toYaml": func(v any) string {
			out, err := yaml.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSuffix(string(out), "\n")
		},
	}
	tmpl, err := template.New(chartPolicy).Funcs(funcs).Parse(readChartPolicy(t))
	if err != nil {
		t.Fatal(err)
	}
	values := map[string]any{
		"Release": map[string]any{"Name": "vv", "Namespace": "volcano-system"},
		"Values": map[string]any{
			"admissionPolicy": map[string]any{"enabled": true, "envFrom": string(EnvFromPrefixed),
				"deviceEnvWithoutGPU": map[string]any{"refuse": true, "exemptNamespaces": []any{"kube-system"}}},
			"devicePlugin": map[string]any{"enabled": true, "allowDisableControl": false},
		},
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, values); err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(out.String(), "\n---\n") {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
		if err := yaml.Unmarshal([]byte(doc), policy); err != nil {
			t.Fatalf("%s: %v", chartPolicy, err)
		}
		if policy.Kind == "ValidatingAdmissionPolicy" && strings.HasSuffix(policy.Name, suffix) {
			return policy
		}
	}
	t.Fatalf("%s: no ValidatingAdmissionPolicy named *%s", chartPolicy, suffix)
	return nil
}

// expression is one CEL expression of a policy and the types it may return.
type expression struct {
	name, text string
	returns    []*celgo.Type
}

func (e *expression) GetExpression() string      { return e.text }
func (e *expression) ReturnTypes() []*celgo.Type { return e.returns }
func (e *expression) GetName() string            { return e.name }

// admitter evaluates a ValidatingAdmissionPolicy's CEL with the API server's own compiler and
// environment: its variables, match conditions, validations and message expressions.
type admitter struct {
	policy                       *admissionregistrationv1.ValidatingAdmissionPolicy
	match, validations, messages plugincel.ConditionEvaluator
}

func newAdmitter(t *testing.T, policy *admissionregistrationv1.ValidatingAdmissionPolicy) admitter {
	t.Helper()
	env, err := plugincel.NewCompositionEnv(plugincel.VariablesTypeName, environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		t.Fatal(err)
	}
	compiler := plugincel.NewCompositedCompilerFromTemplate(env)
	var decls plugincel.OptionalVariableDeclarations
	for _, v := range policy.Spec.Variables {
		compiled := compiler.CompileAndStoreVariable(&expression{name: v.Name, text: v.Expression,
			returns: []*celgo.Type{celgo.AnyType, celgo.DynType}}, decls, environment.StoredExpressions)
		if compiled.Error != nil {
			t.Fatalf("%s: %s: variable %s: %v", chartPolicy, policy.Name, v.Name, compiled.Error)
		}
	}
	var match, validations, messages []plugincel.ExpressionAccessor
	for _, m := range policy.Spec.MatchConditions {
		match = append(match, &expression{text: m.Expression, returns: []*celgo.Type{celgo.BoolType}})
	}
	for _, v := range policy.Spec.Validations {
		if v.MessageExpression == "" {
			t.Fatalf("%s: %s: validation %q has no messageExpression", chartPolicy, policy.Name, v.Expression)
		}
		validations = append(validations, &expression{text: v.Expression, returns: []*celgo.Type{celgo.BoolType}})
		messages = append(messages, &expression{text: v.MessageExpression, returns: []*celgo.Type{celgo.StringType}})
	}
	a := admitter{policy: policy,
		match:       compiler.CompileCondition(match, decls, environment.StoredExpressions),
		validations: compiler.CompileCondition(validations, decls, environment.StoredExpressions),
		messages:    compiler.CompileCondition(messages, decls, environment.StoredExpressions),
	}
	for _, f := range []plugincel.ConditionEvaluator{a.match, a.validations, a.messages} {
		for _, err := range f.CompilationErrors() {
			t.Fatalf("%s: %s: %v", chartPolicy, policy.Name, err)
		}
	}
	return a
}

// create returns the messages with which the policy refuses pod on create, as a pod author
// would send it; none when it admits it.
func (a admitter) create(t *testing.T, pod *corev1.Pod) []string {
	t.Helper()
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	attrs := admission.NewAttributesRecord(pod, nil, gvk, pod.Namespace, pod.Name, gvr, "", admission.Create, nil, false,
		&user.DefaultInfo{Name: "mallory"})
	versioned := &admission.VersionedAttributes{Attributes: attrs, VersionedKind: gvk, VersionedObject: pod}
	request := plugincel.CreateAdmissionRequest(attrs, metav1.GroupVersionResource(gvr), metav1.GroupVersionKind(gvk))
	// The API server evaluates every message expression and reads only those of the
	// validations that fail: an error in another (indexing an empty list of hits) is no error.
	eval := func(f plugincel.ConditionEvaluator) []plugincel.EvaluationResult {
		results, _, err := f.ForInput(context.Background(), versioned, request, plugincel.OptionalVariableBindings{}, nil, celconfig.RuntimeCELCostBudget)
		if err != nil {
			t.Fatalf("%s: %s: %v", chartPolicy, a.policy.Name, err)
		}
		return results
	}
	valid := func(r plugincel.EvaluationResult) bool {
		if r.Error != nil {
			t.Fatalf("%s: %s: %q: %v", chartPolicy, a.policy.Name, r.ExpressionAccessor.GetExpression(), r.Error)
		}
		return r.EvalResult == types.True
	}
	for _, r := range eval(a.match) {
		if !valid(r) {
			return nil
		}
	}
	messages := eval(a.messages)
	var refusals []string
	for i, r := range eval(a.validations) {
		if valid(r) {
			continue
		}
		if err := messages[i].Error; err != nil {
			t.Fatalf("%s: %s: %q: %v", chartPolicy, a.policy.Name, messages[i].ExpressionAccessor.GetExpression(), err)
		}
		refusals = append(refusals, messages[i].EvalResult.Value().(string))
	}
	return refusals
}

// A pod that asks for no GPU may not name GPUs for the NVIDIA container toolkit in its env,
// in any kind of container, but "void" and "none" (no GPU); a pod asking for vGPU or for
// nvidia.com/gpu is the other policies' and the device plugins' to judge.
func TestChartPolicyRefusesDeviceEnvWithoutGPU(t *testing.T) {
	admit := newAdmitter(t, chartPolicyNamed(t, "-device-env-without-gpu"))
	refusal := func(container, variable string) []string {
		return []string{"pod ns/p " + container + " sets " + variable + " but asks for no GPU: it would reach GPUs the scheduler shares out, " +
			`with no booking and no limits; ask for volcano.sh/vgpu-number, or set it to "void" (admissionPolicy.deviceEnvWithoutGPU)`}
	}
	podWith := func(env []corev1.EnvVar, resources corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Env: env,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}, Limits: resources}}}}}
	}
	fromField := &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}
	cases := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"all, no GPU asked", podWith([]corev1.EnvVar{{Name: "HOME", Value: "/"}, {Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}}, nil),
			refusal(`container "main"`, "NVIDIA_VISIBLE_DEVICES")},
		{"a GPU by index", podWith([]corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "0"}}, nil), refusal(`container "main"`, "NVIDIA_VISIBLE_DEVICES")},
		{"MIG devices", podWith([]corev1.EnvVar{{Name: "NVIDIA_MIG_CONFIG_DEVICES", Value: "all"}}, nil), refusal(`container "main"`, "NVIDIA_MIG_CONFIG_DEVICES")},
		{"from a field", podWith([]corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", ValueFrom: fromField}}, nil), refusal(`container "main"`, "NVIDIA_VISIBLE_DEVICES")},
		{"void", podWith([]corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "void"}}, nil), nil},
		{"none", podWith([]corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "none"}}, nil), nil},
		{"other NVIDIA settings", podWith([]corev1.EnvVar{{Name: "NVIDIA_DRIVER_CAPABILITIES", Value: "all"}, {Name: "CUDA_VISIBLE_DEVICES", Value: "0"}}, nil), nil},
		{"a vGPU pod", podWith([]corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}},
			corev1.ResourceList{DefaultCountResource: resource.MustParse("1")}), nil},
		{"a whole-GPU pod", podWith([]corev1.EnvVar{{Name: "NVIDIA_VISIBLE_DEVICES", Value: "all"}},
			corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}), nil},
	}
	for _, tc := range cases {
		if got := admit.create(t, tc.pod); !slices.Equal(got, tc.want) {
			t.Errorf("%s: the policy says %q, want %q", tc.name, got, tc.want)
		}
	}
	init := podWith(nil, nil)
	init.Spec.InitContainers = []corev1.Container{{Name: "setup", Env: []corev1.EnvVar{{Name: "NVIDIA_IMEX_CHANNELS", Value: "0"}}}}
	if got, want := admit.create(t, init), refusal(`init container "setup"`, "NVIDIA_IMEX_CHANNELS"); !slices.Equal(got, want) {
		t.Errorf("init container: the policy says %q, want %q", got, want)
	}
}
