package e2e_test

import "time"

// The suite's timeouts, in one place.
const (
	// setupTimeout bounds creating the kwok cluster and starting the manager.
	setupTimeout = 10 * time.Minute
	// teardownTimeout bounds stopping the manager and deleting the cluster.
	teardownTimeout = 2 * time.Minute
	// waitTimeout is Eventually's default: pods starting, a small rollout,
	// a status or condition catching up.
	waitTimeout = 60 * time.Second
	// rolloutTimeout bounds a rollout over many pods, or one that steps one
	// pod at a time (each step waits for kwok's one-second restart delay).
	rolloutTimeout = 3 * time.Minute
	// pollInterval is how often Eventually and Consistently poll.
	pollInterval = 250 * time.Millisecond
	// holdStill is how long Consistently watches that nothing more happens:
	// several kwok restart delays and many controller rounds.
	holdStill = 4 * time.Second
	// managerReadyTimeout bounds a restarted manager becoming ready.
	managerReadyTimeout = 90 * time.Second
)
