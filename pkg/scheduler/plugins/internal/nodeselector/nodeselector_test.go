package nodeselector

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

func expr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// terms covers every operator, ANDed requirements, matchFields on the name and on another
// field, and the empty term.
var terms = []corev1.NodeSelectorTerm{
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "a", "b")}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpNotIn, "a")}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu", corev1.NodeSelectorOpExists)}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpu", corev1.NodeSelectorOpDoesNotExist)}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpGt, "4")}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpLt, "4")}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{
		expr("zone", corev1.NodeSelectorOpIn, "a"), expr("gpu", corev1.NodeSelectorOpIn, "h200")}},
	{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n1")}},
	{MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpNotIn, "n1")}},
	{MatchFields: []corev1.NodeSelectorRequirement{expr("spec.other", corev1.NodeSelectorOpNotIn, "x")}},
	{MatchFields: []corev1.NodeSelectorRequirement{expr("spec.other", corev1.NodeSelectorOpIn, "")}},
	{MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "b")},
		MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "n2")}},
	{},
}

var nodes = []*corev1.Node{
	{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a", "gpu": "h200", "gpus": "8"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{"zone": "b", "gpus": "2"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "n3", Labels: map[string]string{"gpus": "many"}}},
	{ObjectMeta: metav1.ObjectMeta{Name: "n4"}},
	{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "a"}}}, // no name
}

// TestRequiredAgreesWithHelper: every single term and every pair of terms matches the same
// nodes as the component helper's selector.
func TestRequiredAgreesWithHelper(t *testing.T) {
	var selectors [][]corev1.NodeSelectorTerm
	for i := range terms {
		selectors = append(selectors, terms[i:i+1])
		for j := i + 1; j < len(terms); j++ {
			selectors = append(selectors, []corev1.NodeSelectorTerm{terms[i], terms[j]})
		}
	}
	selectors = append(selectors, nil) // no terms at all
	for si, s := range selectors {
		ns := &corev1.NodeSelector{NodeSelectorTerms: s}
		want, err := nodeaffinity.NewNodeSelector(ns)
		if err != nil {
			t.Fatalf("selector %d: helper refused it: %v", si, err)
		}
		got, err := NewRequired(ns)
		if err != nil {
			t.Fatalf("selector %d: %v", si, err)
		}
		for _, n := range nodes {
			if g, w := got.Match(n), want.Match(n); g != w {
				t.Errorf("selector %d %+v on node %q %v: got %v, helper says %v", si, s, n.Name, n.Labels, g, w)
			}
		}
	}
}

// TestPreferredAgreesWithHelper: scores equal the helper's for weighted subsets of terms.
func TestPreferredAgreesWithHelper(t *testing.T) {
	for mask := 1; mask < 1<<6; mask++ {
		var pref []corev1.PreferredSchedulingTerm
		var wantTotal int64
		for i := 0; i < 6; i++ {
			if mask&(1<<i) == 0 {
				continue
			}
			w := int32(i*10 + 1)
			// A zero weight is skipped by both; every third term gets one.
			if i%3 == 2 {
				w = 0
			}
			term := terms[(i*5+mask)%len(terms)]
			pref = append(pref, corev1.PreferredSchedulingTerm{Weight: w, Preference: term})
			if w != 0 && (len(term.MatchExpressions) > 0 || len(term.MatchFields) > 0) {
				wantTotal += int64(w)
			}
		}
		want, err := nodeaffinity.NewPreferredSchedulingTerms(pref)
		if err != nil {
			t.Fatalf("mask %b: helper refused it: %v", mask, err)
		}
		got, err := NewPreferred(pref)
		if err != nil {
			t.Fatalf("mask %b: %v", mask, err)
		}
		if got.TotalWeight() != wantTotal {
			t.Errorf("mask %b: total weight %d, want %d", mask, got.TotalWeight(), wantTotal)
		}
		for _, n := range nodes {
			if g, w := got.Score(n), want.Score(n); g != w {
				t.Errorf("mask %b on node %q: score %d, helper says %d", mask, n.Name, g, w)
			}
		}
	}
}

func TestInvalidTermsRefused(t *testing.T) {
	cases := map[string]corev1.NodeSelectorTerm{
		"unknown operator":            {MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", "Near", "a")}},
		"In without values":           {MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn)}},
		"Gt with a word":              {MatchExpressions: []corev1.NodeSelectorRequirement{expr("gpus", corev1.NodeSelectorOpGt, "four")}},
		"field with two values":       {MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpIn, "a", "b")}},
		"field with Exists":           {MatchFields: []corev1.NodeSelectorRequirement{expr("metadata.name", corev1.NodeSelectorOpExists)}},
		"invalid label key":           {MatchExpressions: []corev1.NodeSelectorRequirement{expr("a b", corev1.NodeSelectorOpExists)}},
		"valid term next to bad term": {MatchExpressions: []corev1.NodeSelectorRequirement{expr("zone", corev1.NodeSelectorOpIn, "a"), expr("x", "Near")}},
	}
	for name, bad := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := NewRequired(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{terms[0], bad}}); err == nil {
				t.Error("NewRequired accepted it")
			}
			if _, err := NewPreferred([]corev1.PreferredSchedulingTerm{{Weight: 1, Preference: bad}}); err == nil {
				t.Error("NewPreferred accepted it")
			}
		})
	}
}

// BenchmarkMatch compares the compiled matcher with the helper's, one node per call.
func BenchmarkMatch(b *testing.B) {
	ns := &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{terms[0], terms[6]}}
	many := make([]*corev1.Node, 1000)
	for i := range many {
		many[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i),
			Labels: map[string]string{"zone": string(rune('a' + i%4)), "gpu": "h200", "kubernetes.io/hostname": fmt.Sprintf("node-%d", i)}}}
	}
	b.Run("compiled", func(b *testing.B) {
		r, err := NewRequired(ns)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			r.Match(many[i%len(many)])
		}
	})
	b.Run("component-helpers", func(b *testing.B) {
		s, err := nodeaffinity.NewNodeSelector(ns)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s.Match(many[i%len(many)])
		}
	})
}
