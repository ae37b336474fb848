//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	assign "github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/assignment"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/deviceplugin/monitor/monitortest"
	"github.com/volcano-vgpu/volcano-vgpu/pkg/vgpu"
)

// The job labels the test's Prometheus gives its two targets, and the chart's rules are
// rendered with.
const (
	promSchedulerJob    = "volcano-vgpu-scheduler"
	promDevicePluginJob = "vgpu-device-plugin"
)

// The chart's dashboard and alerts on the real Prometheus (Debian's, from make tools) scraping
// the real vc-scheduler (leader election on) and vgpu-device-plugin on the real node: every
// panel's query and every alert's expression is accepted and finds series, VolcanoVGPUPodsPending
// fires for a vGPU pod that cannot fit, and VolcanoVGPUContainerOverMemory for a running vGPU
// container whose shared region holds more than its limit, with the rules rendered by Helm from
// the chart's file with a pending limit of 15 s and no wait (for: 0s).
//
// The container series (vGPU_device_memory_*) come from the region HAMi-core keeps for a
// container's CUDA processes; the cluster's containers run none, so the test writes the region
// a process holding 1.2 times its limit would leave, in the container's cache directory under
// the plugin's hook path, where the plugin's monitor reads it.
func TestDashboardAndAlertsOnPrometheus(t *testing.T) {
	prometheus := filepath.Join(repoRoot(), ".cache", "bin", "prometheus")
	if _, err := os.Stat(prometheus); err != nil {
		t.Fatalf("prometheus not unpacked: run make tools (make test does): %v", err)
	}
	e := newSchedulerEnv(t)
	e.claimRealNode()
	waitNodeFreeOfOtherVGPUPods(t, e.ns)
	plugin := devicePlugin(t, e.cs, 1, e.name)
	queue := e.queue("dash", corev1.ResourceList{vgpu.DefaultMemoryResource: resource.MustParse("20000")})
	schedAddr := freeAddress(t)
	e.scheduler(seedConf(t), "--enable-metrics", "--listen-address", schedAddr, "--leader-elect=true",
		"--leader-elect-resource-name", e.name, "--leader-elect-lease-duration", "6s", "--leader-elect-renew-deadline", "4s",
		"--leader-elect-retry-period", "1s")
	e.vgpuGang("fits", queue, 1, 1000, 10)
	e.vgpuGang("toobig", queue, 1, 10000, 10)
	e.waitBound("fits-", 1, 60*time.Second)
	fits := podPhase(t, e.cs, e.ns, "fits-0", corev1.PodRunning, 90*time.Second)
	assigned, err := vgpu.DecodePodDevices(fits.Annotations[vgpu.AssignedDevicesAnnotation])
	if err != nil || len(assigned) != 1 || len(assigned[0]) != 1 {
		t.Fatalf("pod %s: assignment %q (%v), want one device", fits.Name, fits.Annotations[vgpu.AssignedDevicesAnnotation], err)
	}
	// The plugin's memory factor is 1: the booked units are the limit in MiB it gave HAMi-core.
	gpu, limitMiB := assigned[0][0].UUID, uint64(assigned[0][0].UsedMemory)
	ctr := fits.Spec.Containers[0].Name
	// The plugin made the directory in Allocate, before the container started.
	cacheDir := assign.ContainerCacheDir(plugin.hook, string(fits.UID), ctr)
	if _, err := monitortest.WriteHolding(cacheDir, gpu, limitMiB*6/5, limitMiB); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, chartRules(t, "--set", "prometheusRule.enabled=true", "--set", "prometheusRule.for=0s",
		"--set-json", "prometheusRule.pendingMinutes=0.25", "--set", "custom.leader_elect_enable=true",
		"--set", "prometheusRule.schedulerJob="+promSchedulerJob, "--set", "prometheusRule.devicePluginJob="+promDevicePluginJob), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [%q]
scrape_configs:
- {job_name: %s, static_configs: [{targets: [%q]}]}
- {job_name: %s, static_configs: [{targets: [%q]}]}
`, rules, promSchedulerJob, schedAddr, promDevicePluginJob, pluginMetrics)
	if err := os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	promAddr := freeAddress(t)
	startProgram(t, prometheus, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+promAddr)
	prom := promAPI{t: t, base: "http://" + promAddr}
	eventually(t, 60*time.Second, "Prometheus scrapes both targets", func(ctx context.Context) (bool, string, error) {
		n, err := prom.series(ctx, `up == 1`)
		return err == nil && n == 2, fmt.Sprintf("%d targets up (%v)", n, err), nil
	})

	// Panels: Grafana's variables take values that select everything here (or the device
	// plugin's job); a query must parse and find series.
	for _, q := range dashboardQueries(t) {
		expr := substituteVariables(t, q.expr, map[string]string{"node": ".*", "queue": ".*",
			"device_plugin_job": promDevicePluginJob, "__rate_interval": "1m"})
		prom.wantSeries(q.panel, expr)
	}

	// Alerts: every expression parses. Most conditions are false on a healthy cluster, so an
	// expression's own result proves little; instead each of its metric selectors must find
	// series, which shows the rule reads metrics that exist under the labels it matches. The
	// pending and over-memory rules' conditions are made true, and their alerts fire below.
	for _, r := range alertRules(t, rules) {
		prom.wantParses(r.Alert, r.Expr)
		for _, sel := range selectors(r.Expr) {
			prom.wantSeries(r.Alert+" selector", sel)
		}
	}
	eventually(t, 90*time.Second, "VolcanoVGPUPodsPending fires for toobig", func(ctx context.Context) (bool, string, error) {
		n, err := prom.series(ctx, fmt.Sprintf(`ALERTS{alertname="VolcanoVGPUPodsPending", alertstate="firing", job_namespace=%q, job_name="toobig"}`, e.ns))
		return err == nil && n == 1, fmt.Sprintf("%d firing (%v)", n, err), nil
	})
	eventually(t, 60*time.Second, "VolcanoVGPUContainerOverMemory fires for "+fits.Name, func(ctx context.Context) (bool, string, error) {
		n, err := prom.series(ctx, fmt.Sprintf(`ALERTS{alertname="VolcanoVGPUContainerOverMemory", alertstate="firing", podnamespace=%q, podname=%q, ctrname=%q, deviceuuid=%q}`,
			e.ns, fits.Name, ctr, gpu))
		return err == nil && n == 1, fmt.Sprintf("%d firing (%v)", n, err), nil
	})
}

// chartRules renders the chart's PrometheusRule with the helm arguments and returns its
// spec: the rules file Prometheus and promtool read.
func chartRules(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(helmPath(), append([]string{"template", "vv", filepath.Join(repoRoot(), "charts", "volcano-vgpu"),
		"-n", chartNamespace, "--show-only", "templates/monitoring.yaml"}, args...)...).Output()
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	for _, doc := range strings.Split(string(out), "\n---") {
		var obj struct {
			Kind string          `json:"kind"`
			Spec json.RawMessage `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("chart manifest: %v", err)
		}
		if obj.Kind == "PrometheusRule" {
			spec, err := yaml.JSONToYAML(obj.Spec)
			if err != nil {
				t.Fatal(err)
			}
			return spec
		}
	}
	t.Fatalf("helm template %v renders no PrometheusRule", args)
	return nil
}

type alertRule struct {
	Alert string `json:"alert"`
	Expr  string `json:"expr"`
}

// alertRules reads the alerting rules of a rules file.
func alertRules(t *testing.T, path string) []alertRule {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []alertRule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	var rules []alertRule
	for _, g := range file.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s holds no rules", path)
	}
	return rules
}

type panelQuery struct{ panel, expr string }

// dashboardQueries are the queries of every panel of the chart's dashboard.
func dashboardQueries(t *testing.T) []panelQuery {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "charts", "volcano-vgpu", "dashboards", "vgpu.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Type    string `json:"type"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var queries []panelQuery
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			queries = append(queries, panelQuery{p.Title, target.Expr})
		}
	}
	return queries
}

var variableRE = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// substituteVariables replaces Grafana's template variables; one without a value fails the
// test.
func substituteVariables(t *testing.T, expr string, values map[string]string) string {
	t.Helper()
	return variableRE.ReplaceAllStringFunc(expr, func(v string) string {
		// A regular expression's group reference ("$1" in label_replace) does not match.
		name := variableRE.FindStringSubmatch(v)[1]
		if value, ok := values[name]; ok {
			return value
		}
		t.Errorf("query %q uses variable $%s, which the test gives no value", expr, name)
		return v
	})
}

var (
	// bracedSelectorRE is a metric name with its label matchers.
	bracedSelectorRE = regexp.MustCompile(`\b([A-Za-z_:][A-Za-z0-9_:]*)\{[^}]*\}`)
	stringRE         = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	// groupingRE is a by/on/... label list; rangeRE a range or subquery.
	groupingRE   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	rangeRE      = regexp.MustCompile(`\[[^\]]*\]`)
	identifierRE = regexp.MustCompile(`\b[A-Za-z_:][A-Za-z0-9_:]*\b(\s*\()?`)
	keywords     = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
		"group_left", "group_right", "inf", "nan"}
)

// selectors are the metric selectors of a PromQL expression, as written: a name with its
// matchers, or a bare name that is no function, keyword or label list. Enough for the
// chart's expressions (no selector without a name, no string holding braces).
func selectors(expr string) []string {
	var out []string
	for _, m := range bracedSelectorRE.FindAllString(expr, -1) {
		out = append(out, m)
	}
	rest := bracedSelectorRE.ReplaceAllString(expr, " ")
	for _, re := range []*regexp.Regexp{stringRE, groupingRE, rangeRE} {
		rest = re.ReplaceAllString(rest, " ")
	}
	for _, m := range identifierRE.FindAllStringSubmatch(rest, -1) {
		name := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(m[0]), "("))
		if m[1] != "" || slices.Contains(keywords, strings.ToLower(name)) {
			continue
		}
		out = append(out, name)
	}
	return out
}

// promAPI queries a Prometheus server's HTTP API.
type promAPI struct {
	t    *testing.T
	base string
}

// series runs an instant query and counts the series of its vector result; an expression the
// server refuses is an error naming its reason.
func (p promAPI) series(ctx context.Context, expr string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string            `json:"resultType"`
			Result     []json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, fmt.Errorf("query %q: %s: %w", expr, resp.Status, err)
	}
	if body.Status != "success" {
		return 0, fmt.Errorf("query %q refused: %s", expr, body.Error)
	}
	if body.Data.ResultType != "vector" {
		return 0, fmt.Errorf("query %q gives a %s, want a vector", expr, body.Data.ResultType)
	}
	return len(body.Data.Result), nil
}

// wantParses fails the test when Prometheus refuses expr.
func (p promAPI) wantParses(what, expr string) {
	p.t.Helper()
	if _, err := p.series(context.Background(), expr); err != nil {
		p.t.Errorf("%s: %v", what, err)
	}
}

// wantSeries waits until expr, which must parse, returns a series.
func (p promAPI) wantSeries(what, expr string) {
	p.t.Helper()
	eventually(p.t, 60*time.Second, fmt.Sprintf("%s: %s returns series", what, expr), func(ctx context.Context) (bool, string, error) {
		n, err := p.series(ctx, expr)
		if err != nil && strings.Contains(err.Error(), "refused") {
			return false, "", err
		}
		return n > 0, fmt.Sprintf("%d series (%v)", n, err), nil
	})
}
