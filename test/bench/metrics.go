package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// apiserverMetrics scrapes the API server's /metrics.
func (e *env) apiserverMetrics(ctx context.Context) (map[string]*familyValues, error) {
	raw, err := e.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API server metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, err
	}
	out := map[string]*familyValues{}
	for name, f := range families {
		fv := &familyValues{}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s := sample{labels: labels}
			switch {
			case m.GetCounter() != nil:
				s.value = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				s.value = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				s.value = m.GetHistogram().GetSampleSum()
				s.count = float64(m.GetHistogram().GetSampleCount())
			}
			fv.samples = append(fv.samples, s)
		}
		out[name] = fv
	}
	return out, nil
}

type sample struct {
	labels map[string]string
	value  float64 // counter/gauge value, or histogram sum
	count  float64 // histogram count
}

type familyValues struct{ samples []sample }

// sum adds the values (and histogram counts) of the samples whose labels
// include every given pair.
func (f *familyValues) sum(match map[string]string) (value, count float64) {
	if f == nil {
		return 0, 0
	}
	for _, s := range f.samples {
		ok := true
		for k, v := range match {
			if s.labels[k] != v {
				ok = false
				break
			}
		}
		if ok {
			value += s.value
			count += s.count
		}
	}
	return value, count
}

// podWrites counts the writes to pods' main resource (not status): the
// in-place upgrades, by the operator or the floor client.
func podWrites(m map[string]*familyValues) float64 {
	var total float64
	for _, verb := range []string{"PATCH", "UPDATE"} {
		v, _ := m["apiserver_request_total"].sum(map[string]string{"resource": "pods", "verb": verb, "subresource": ""})
		total += v
	}
	return total
}

// managerPeakRSS reads the manager's peak resident memory (VmHWM) in MiB.
func (e *env) managerPeakRSS() (float64, error) {
	data, err := os.ReadFile(e.pidFile)
	if err != nil {
		return 0, err
	}
	pid := strings.TrimSpace(string(data))
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) >= 2 && fields[0] == "VmHWM:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%s/status", pid)
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
			if anon, file, err := e.managerRSS(); err == nil {
				peak.anon, peak.file = max(peak.anon, anon), max(peak.file, file)
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

// managerRSS reads the manager's RssAnon and RssFile, in MiB.
func (e *env) managerRSS() (anon, file float64, err error) {
	data, err := os.ReadFile(e.pidFile)
	if err != nil {
		return 0, 0, err
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(data)) + "/status")
	if err != nil {
		return 0, 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		kb, perr := strconv.ParseFloat(fields[1], 64)
		switch fields[0] {
		case "RssAnon:":
			anon, err = kb/1024, perr
		case "RssFile:":
			file, err = kb/1024, perr
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return anon, file, nil
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
