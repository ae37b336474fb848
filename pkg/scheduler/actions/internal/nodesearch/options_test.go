package nodesearch

import "testing"

func TestFeasibleNodesToFind(t *testing.T) {
	cases := []struct {
		name  string
		opts  Options
		nodes int
		want  int
	}{
		{"small cluster searched whole", DefaultOptions(), 80, 80},
		{"at the minimum, whole", DefaultOptions(), 100, 100},
		{"adaptive: 50% less 1% per 125 nodes", DefaultOptions(), 1000, 420},
		{"adaptive share falls to its floor", DefaultOptions(), 10000, 500},
		{"never fewer than the minimum", DefaultOptions(), 150, 100},
		{"fixed percentage", Options{MinimumFeasibleNodes: 100, PercentageNodesToFind: 30, MinimumPercentageNodesToFind: 5}, 1000, 300},
		{"fixed percentage below the minimum count", Options{MinimumFeasibleNodes: 100, PercentageNodesToFind: 5, MinimumPercentageNodesToFind: 5}, 1000, 100},
		{"100% means all", Options{MinimumFeasibleNodes: 100, PercentageNodesToFind: 100, MinimumPercentageNodesToFind: 5}, 5000, 5000},
		{"raised floor", Options{MinimumFeasibleNodes: 100, MinimumPercentageNodesToFind: 20}, 5000, 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.opts.feasibleNodesToFind(c.nodes); got != c.want {
				t.Errorf("feasibleNodesToFind(%d) = %d, want %d", c.nodes, got, c.want)
			}
		})
	}
}
