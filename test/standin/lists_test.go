package main

import (
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volcano-vgpu/volcano-vgpu/pkg/scheduler/testing/st"
)

// list builds a ResourceList from name/quantity pairs.
func list(pairs ...string) corev1.ResourceList {
	return st.Resources("", "", pairs...)
}

// semanticList compares ResourceLists by value, not by the quantities' formatting.
var semanticList = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
