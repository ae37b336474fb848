package nvml

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Inspect describes the driver and the GPUs an initialised backend finds,
// as a table for people (the plugin's "inspect" command prints it). It
// shows exactly what the plugin would register, so a run on a real node is
// the check that discovery reads that node right. GPUs that could not be
// read are listed under the table and their error is also returned.
func Inspect(b Backend) (string, error) {
	var out strings.Builder
	driver, err := b.Driver()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(&out, "driver %s, NVML %s, CUDA %s\n",
		driver.DriverVersion, driver.NVMLVersion, cudaVersion(driver.CUDADriverVersion))

	gpus, listErr := b.Devices()
	if gpus == nil && listErr != nil {
		return "", listErr
	}
	fmt.Fprintf(&out, "%d GPU(s), ordered by minor number\n", len(gpus))
	// Usage is what the host metrics serve; a GPU whose usage cannot be
	// read shows "-" there and its error is listed under the table.
	usage, usageErr := b.Usage()
	used := make(map[string]Usage, len(usage))
	for _, u := range usage {
		used[u.UUID] = u
	}
	table := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "INDEX\tMINOR\tUUID\tNAME\tMEMORY(MiB)\tUSED(MiB)\tUTIL\tBUS ID\tNUMA\tMIG\tHEALTH")
	for _, g := range gpus {
		usedMiB, util := "-", "-"
		if u, ok := used[g.UUID]; ok {
			usedMiB, util = fmt.Sprint(u.MemoryUsedBytes/bytesPerMiB), fmt.Sprintf("%d%%", u.UtilizationPercent)
		}
		health := "healthy"
		if !g.Healthy {
			health = "unhealthy: " + g.UnhealthyReason
		}
		mig := "off"
		if g.MIGEnabled {
			mig = "on"
		}
		numa := "-"
		if g.NUMANode >= 0 {
			numa = fmt.Sprint(g.NUMANode)
		}
		fmt.Fprintf(table, "%d\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			g.Index, g.Minor, g.UUID, g.Name, g.MemoryMiB, usedMiB, util, g.BusID, numa, mig, health)
	}
	if err := table.Flush(); err != nil {
		return "", fmt.Errorf("format GPU table: %w", err)
	}
	if listErr != nil {
		fmt.Fprintf(&out, "not listed: %v\n", listErr)
	}
	if usageErr != nil {
		fmt.Fprintf(&out, "usage not read: %v\n", usageErr)
	}
	return out.String(), listErr
}

// cudaVersion turns NVML's 1000*major+10*minor encoding into "13.0".
func cudaVersion(v int) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
