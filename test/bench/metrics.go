package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sidecarset-operator/sidecarset-operator/test/promtext"
)

// apiserverMetrics scrapes the API server's /metrics.
func (e *env) apiserverMetrics(ctx context.Context) (promtext.Scrape, error) {
	raw, err := e.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server metrics: %w", err)
	}
	return promtext.Parse(raw)
}

// podWrites counts the writes to pods' main resource (not status): the
// in-place upgrades, by the operator or the floor client.
func podWrites(m promtext.Scrape) float64 {
	var total float64
	for _, verb := range []string{"PATCH", "UPDATE"} {
		v, _ := m.Sum("apiserver_request_total", map[string]string{"resource": "pods", "verb": verb, "subresource": ""})
		total += v
	}
	return total
}

// podResizes counts the pods/resize calls (PATCH of the subresource).
func podResizes(m promtext.Scrape) float64 {
	v, _ := m.Sum("apiserver_request_total", map[string]string{"resource": "pods", "verb": "PATCH", "subresource": "resize"})
	return v
}

// managerPeakRSS reads the manager's peak resident memory (VmHWM) in MiB.
func (e *env) managerPeakRSS() (float64, error) {
	m, err := e.managerMemory()
	return m["VmHWM"], err
}

// memoryPeak is what a memory sampler saw: the peak of the manager's
// anonymous memory (heap, stacks: what it allocated) and the most of its
// file-backed resident pages (the mapped binary, shared with the page
// cache), both in MiB.
type memoryPeak struct{ anon, file float64 }

// sampleManagerMemory samples the manager's RssAnon and RssFile every
// 100 ms until the returned function is called, which returns the peaks.
// VmHWM alone does not say how much of the peak is the binary's own pages.
func (e *env) sampleManagerMemory(ctx context.Context) func() memoryPeak {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan memoryPeak, 1)
	go func() {
		var peak memoryPeak
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if m, err := e.managerMemory(); err == nil {
				peak.anon, peak.file = max(peak.anon, m["RssAnon"]), max(peak.file, m["RssFile"])
			}
			select {
			case <-ctx.Done():
				done <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return func() memoryPeak {
		cancel()
		return <-done
	}
}

// managerMemory reads the memory lines of the manager's /proc status (VmHWM,
// RssAnon, RssFile, ...), in MiB.
func (e *env) managerMemory() (map[string]float64, error) {
	data, err := os.ReadFile(e.pidFile)
	if err != nil {
		return nil, err
	}
	pid := strings.TrimSpace(string(data))
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(status), "\n") {
		key, value, _ := strings.Cut(line, ":")
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		kb, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("/proc/%s/status: %s: %w", pid, key, err)
		}
		out[key] = kb / 1024
	}
	if _, ok := out["VmHWM"]; !ok {
		return nil, fmt.Errorf("no VmHWM in /proc/%s/status", pid)
	}
	return out, nil
}

// percentile returns the p-th percentile (0..100) of sorted durations.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(sorted)-1))
	return sorted[i]
}

func sortedCopy(d []time.Duration) []time.Duration {
	out := slices.Clone(d)
	slices.Sort(out)
	return out
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// table prints a markdown table.
func table(header []string, rows [][]string) {
	fmt.Println("| " + strings.Join(header, " | ") + " |")
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	fmt.Println("|" + strings.Join(seps, "|") + "|")
	for _, r := range rows {
		fmt.Println("| " + strings.Join(r, " | ") + " |")
	}
}

// cpuTimes is the CPU time used so far by each process of the dev cluster
// (by component name) and by the manager.
type cpuTimes map[string]time.Duration

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// cpuSnapshot reads the CPU time of the dev cluster's components (the
// processes kwokctl started from bin/dev/clusters/) and of the manager.
func (e *env) cpuSnapshot() cpuTimes {
	out := cpuTimes{}
	managerPID := ""
	if data, err := os.ReadFile(e.pidFile); err == nil {
		managerPID = strings.TrimSpace(string(data))
	}
	barePID := "-"
	if e.bare != nil {
		barePID = e.bare.pid()
	}
	entries, _ := os.ReadDir("/proc")
	for _, d := range entries {
		pid := d.Name()
		if _, err := strconv.Atoi(pid); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil || len(cmdline) == 0 {
			continue
		}
		argv0, _, _ := strings.Cut(string(cmdline), "\x00")
		name := ""
		switch {
		case pid == managerPID:
			name = "manager"
		case pid == barePID:
			name = bareComponent
		case strings.Contains(argv0, "/bin/dev/clusters/"):
			name = argv0[strings.LastIndex(argv0, "/")+1:]
		default:
			continue
		}
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			continue
		}
		// Fields after the parenthesised command name: utime and stime are
		// the 14th and 15th fields of the line.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if len(fields) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(fields[11], 10, 64)
		stime, _ := strconv.ParseInt(fields[12], 10, 64)
		out[name] += time.Duration(utime+stime) * time.Second / clockTicks
	}
	return out
}

// since is the CPU time used by each component between two snapshots.
func (c cpuTimes) since(before cpuTimes) cpuTimes {
	out := cpuTimes{}
	for k, v := range c {
		out[k] = v - before[k]
	}
	return out
}
