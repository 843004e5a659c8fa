package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// scaleFigures are the manager's figures at the largest size of a scale run:
// the last row of docs/benchmarks.md's table of the manager by number of
// pods. make bench-scale writes them to test/bench/scale-figures.json
// (--figures), committed with the run that table quotes; the manager's
// memory-limit test reads the live heap from there.
type scaleFigures struct {
	SidecarSets int `json:"sidecarSets"`
	Pods        int `json:"pods"`
	// RSSMiB is the most resident memory seen at rest, RSSAnonMiB +
	// RSSFileMiB.
	RSSMiB     float64 `json:"rssMiB"`
	RSSAnonMiB float64 `json:"rssAnonMiB"`
	RSSFileMiB float64 `json:"rssFileMiB"`
	// LiveHeapMiB is the heap allocated right after a forced collection.
	LiveHeapMiB float64 `json:"liveHeapMiB"`
	// LiveHeapGrowthPer1000PodsMiB is its growth per 1 000 pods from the
	// size measured before (with no pod when there is one size).
	LiveHeapGrowthPer1000PodsMiB float64 `json:"liveHeapGrowthPer1000PodsMiB"`
	CPUAtRestPercent             float64 `json:"cpuAtRestPercent"`
	APIRequestsPerReconcile      float64 `json:"apiRequestsPerReconcile"`
	// Rollouts are the rollouts of every pod at this size (none with
	// --rollouts=false).
	Rollouts []scaleRolloutFigures `json:"rollouts,omitempty"`
}

// scaleRolloutFigures is one rollout of the largest size against its floor.
type scaleRolloutFigures struct {
	MaxUnavailable  string  `json:"maxUnavailable"`
	Seconds         float64 `json:"seconds"`
	FloorSeconds    float64 `json:"floorSeconds"`
	PodWritesPerPod float64 `json:"podWritesPerPod"`
}

// figuresOf gives the figures of the largest of runs (measured in
// increasing size, after noPods), rounded as docs/benchmarks.md prints them.
func figuresOf(o scaleOptions, noPods idleFigures, runs []sizeRun) scaleFigures {
	largest := runs[len(runs)-1]
	prev := sizeRun{idle: noPods}
	if len(runs) > 1 {
		prev = runs[len(runs)-2]
	}
	idle := largest.idle
	f := scaleFigures{
		SidecarSets: o.sidecarSets, Pods: largest.pods,
		RSSMiB: roundTo(idle.anon+idle.file, 0), RSSAnonMiB: roundTo(idle.anon, 0), RSSFileMiB: roundTo(idle.file, 0),
		LiveHeapMiB:                  roundTo(idle.heap, 1),
		LiveHeapGrowthPer1000PodsMiB: roundTo(heapGrowth(prev, largest), 2),
		APIRequestsPerReconcile:      roundTo(largest.calls, 1),
	}
	if idle.window > 0 {
		f.CPUAtRestPercent = roundTo(100*idle.cpu.Seconds()/idle.window.Seconds(), 1)
	}
	for _, ro := range largest.rollouts {
		round := ro.rounds[0]
		f.Rollouts = append(f.Rollouts, scaleRolloutFigures{MaxUnavailable: ro.maxUnavailable,
			Seconds: roundTo(round.ours.Seconds(), 1), FloorSeconds: roundTo(round.floor.Seconds(), 1), PodWritesPerPod: roundTo(round.writesPerPod, 2)})
	}
	return f
}

// roundTo rounds x to digits decimals.
func roundTo(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}

// writeScaleFigures writes the figures to path as indented JSON.
func writeScaleFigures(path string, f scaleFigures) error {
	raw, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("recording the scale figures: %w", err)
	}
	return nil
}
