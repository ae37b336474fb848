package vgpu

// defaultMIGGeometries are the partitions the upstream device ConfigMap ships with (the
// A100-80GB memories as corrected on upstream main: 9728/19968/40192/80896 MiB).
func defaultMIGGeometries() []MIGGeometries {
	return []MIGGeometries{
		{
			Models: []string{"A30"},
			AllowedGeometries: []MIGGeometryGroup{
				{Group: "group1", Geometries: []MIGGeometry{{Name: "1g.6gb", Memory: 6144, Count: 4}}},
				{Group: "group2", Geometries: []MIGGeometry{{Name: "2g.12gb", Memory: 12288, Count: 2}}},
				{Group: "group3", Geometries: []MIGGeometry{{Name: "4g.24gb", Memory: 24576, Count: 1}}},
			},
		},
		{
			Models: []string{"A100-SXM4-40GB", "A100-40GB-PCIe", "A100-PCIE-40GB"},
			AllowedGeometries: []MIGGeometryGroup{
				{Group: "group1", Geometries: []MIGGeometry{{Name: "1g.5gb", Memory: 5120, Count: 7}}},
				{Group: "group2", Geometries: []MIGGeometry{
					{Name: "2g.10gb", Memory: 10240, Count: 3},
					{Name: "1g.5gb", Memory: 5120, Count: 1},
				}},
				{Group: "group3", Geometries: []MIGGeometry{{Name: "3g.20gb", Memory: 20480, Count: 2}}},
				{Group: "group4", Geometries: []MIGGeometry{{Name: "7g.40gb", Memory: 40960, Count: 1}}},
			},
		},
		{
			Models: []string{"A100-SXM4-80GB", "A100-80GB-PCIe", "A100-PCIE-80GB"},
			AllowedGeometries: []MIGGeometryGroup{
				{Group: "group1", Geometries: []MIGGeometry{{Name: "1g.10gb", Memory: 9728, Count: 7}}},
				{Group: "group2", Geometries: []MIGGeometry{
					{Name: "2g.20gb", Memory: 19968, Count: 3},
					{Name: "1g.10gb", Memory: 9728, Count: 1},
				}},
				{Group: "group3", Geometries: []MIGGeometry{{Name: "3g.40gb", Memory: 40192, Count: 2}}},
				{Group: "group4", Geometries: []MIGGeometry{{Name: "7g.80gb", Memory: 80896, Count: 1}}},
			},
		},
	}
}
