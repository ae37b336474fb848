package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Values of -o, as kubectl get takes them.
const (
	outputWide = "wide"
	outputJSON = "json"
	outputYAML = "yaml"
)

// printGPUs writes the GPUs as a table followed by one summary line per node, or as a
// json or yaml list of gpuBooking.
func printGPUs(w io.Writer, output string, gpus []gpuBooking) error {
	if output == outputJSON || output == outputYAML {
		return printList(w, output, gpus)
	}
	wide := output == outputWide
	header := []string{"NODE", "INDEX", "TYPE", "MEMORY(MiB)", "CORES", "SLICES", "HEALTH"}
	if wide {
		header = append(header, "UUID", "MODE", "PODS")
	}
	rows := [][]string{header}
	for _, g := range gpus {
		row := []string{g.Node, strconv.Itoa(g.Index), g.Type,
			fraction(g.MemoryBookedMiB, g.MemoryTotalMiB), fraction(g.CoresBooked, g.CoresTotal),
			fraction(int64(g.SlicesUsed), int64(g.SlicesSplit)), health(g.Healthy)}
		if wide {
			row = append(row, g.UUID, g.Mode, orNone(strings.Join(g.Pods, ",")))
		}
		rows = append(rows, row)
	}
	if err := printTable(w, rows); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, s := range summarize(gpus) {
		fmt.Fprintln(w, s)
	}
	return nil
}

// summarize is one line per node, in the order the GPUs are listed.
func summarize(gpus []gpuBooking) []string {
	var lines []string
	for start := 0; start < len(gpus); {
		end := start
		var total gpuBooking
		unhealthy := 0
		for ; end < len(gpus) && gpus[end].Node == gpus[start].Node; end++ {
			g := gpus[end]
			total.MemoryBookedMiB += g.MemoryBookedMiB
			total.MemoryTotalMiB += g.MemoryTotalMiB
			total.CoresBooked += g.CoresBooked
			total.CoresTotal += g.CoresTotal
			total.SlicesUsed += g.SlicesUsed
			total.SlicesSplit += g.SlicesSplit
			if !g.Healthy {
				unhealthy++
			}
		}
		lines = append(lines, fmt.Sprintf("%s: %s, %d unhealthy, memory %s MiB, cores %s, slices %s",
			gpus[start].Node, plural(end-start, "GPU"), unhealthy, fraction(total.MemoryBookedMiB, total.MemoryTotalMiB),
			fraction(total.CoresBooked, total.CoresTotal), fraction(int64(total.SlicesUsed), int64(total.SlicesSplit))))
		start = end
	}
	return lines
}

// printPodVGPUs writes the pods' vGPUs as a table, with a NAMESPACE column when they come
// from every namespace, or as a json or yaml list of podVGPU.
func printPodVGPUs(w io.Writer, output string, vgpus []podVGPU, allNamespaces bool) error {
	if output == outputJSON || output == outputYAML {
		return printList(w, output, vgpus)
	}
	if len(vgpus) == 0 {
		_, err := fmt.Fprintln(w, "No vGPU pods found.")
		return err
	}
	wide := output == outputWide
	header := []string{"POD", "NODE", "PHASE", "GPU", "INDEX", "MEMORY(MiB)", "CORES"}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	if wide {
		header = append(header, "CONTAINER")
	}
	rows := [][]string{header}
	for _, v := range vgpus {
		memory := strconv.FormatInt(v.MemoryMiB, 10)
		if v.MemoryPercent > 0 {
			memory = strconv.Itoa(int(v.MemoryPercent)) + "%"
		}
		row := []string{v.Pod, orNone(v.Node), v.Phase, v.GPU, indexText(v.Index), memory, strconv.Itoa(int(v.Cores))}
		if allNamespaces {
			row = append([]string{v.Namespace}, row...)
		}
		if wide {
			row = append(row, v.Container)
		}
		rows = append(rows, row)
	}
	return printTable(w, rows)
}

// printQueueShares writes the queue tree as a table, each queue indented under its parent,
// followed by a legend and the queues' notes, or as a json or yaml list of queueShare.
func printQueueShares(w io.Writer, output string, shares []queueShare) error {
	if output == outputJSON || output == outputYAML {
		return printList(w, output, shares)
	}
	wide := output == outputWide
	cores := namesCores(shares)
	header := []string{"QUEUE", "STATE", "DESERVED", "ALLOCATED", "CAPABILITY", "GUARANTEE", "OVER SHARE"}
	if wide {
		header = append(header, "WEIGHT", "RECLAIMABLE", "RUNNING", "INQUEUE", "PENDING")
	}
	rows := [][]string{header}
	var notes []string
	for _, s := range shares {
		over := "-"
		if len(s.OverShare) > 0 {
			over = strings.Join(s.OverShare, ",")
		}
		row := []string{strings.Repeat("  ", s.Depth) + s.Name, orNone(s.State),
			formatAmounts(s.Deserved, cores), formatAmounts(s.Allocated, cores),
			formatAmounts(s.Capability, cores), formatAmounts(s.Guarantee, cores), over}
		if wide {
			row = append(row, strconv.Itoa(int(s.Weight)), strconv.FormatBool(s.Reclaimable),
				strconv.Itoa(int(s.PodGroups.Running)), strconv.Itoa(int(s.PodGroups.Inqueue)), strconv.Itoa(int(s.PodGroups.Pending)))
		}
		rows = append(rows, row)
		if s.Note != "" {
			notes = append(notes, s.Name+": "+s.Note)
		}
	}
	if err := printTable(w, rows); err != nil {
		return err
	}
	legend := "vGPU amounts are number/memory (vgpu-memory units); - where the queue names none."
	if cores {
		legend = "vGPU amounts are number/memory/cores (vgpu-memory units, percent of a GPU); - where the queue names none."
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, legend)
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	return nil
}

// printList writes items as a json array or a yaml sequence; an empty list is [] either way.
func printList[T any](w io.Writer, output string, items []T) error {
	if items == nil {
		items = []T{}
	}
	var data bytes.Buffer
	encoder := json.NewEncoder(&data)
	encoder.SetIndent("", "    ")
	encoder.SetEscapeHTML(false) // "<pending>" as written, not "\u003cpending\u003e"
	if err := encoder.Encode(items); err != nil {
		return err
	}
	if output == outputJSON {
		_, err := w.Write(data.Bytes())
		return err
	}
	text, err := yaml.JSONToYAML(data.Bytes())
	if err != nil {
		return err
	}
	_, err = w.Write(text)
	return err
}

// printTable aligns rows in columns three spaces apart, as kubectl get does.
func printTable(w io.Writer, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	for _, row := range rows {
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

func fraction(used, total int64) string {
	return strconv.FormatInt(used, 10) + "/" + strconv.FormatInt(total, 10)
}

func health(healthy bool) string {
	if healthy {
		return "Healthy"
	}
	return "Unhealthy"
}

// indexText is a GPU's index on its node, "-" where unknown.
func indexText(index int) string {
	if index < 0 {
		return "-"
	}
	return strconv.Itoa(index)
}

// orNone is kubectl's spelling of an empty field.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
