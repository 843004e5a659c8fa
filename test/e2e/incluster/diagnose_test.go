package incluster_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/onsi/ginkgo/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A failed spec leaves, in bin/e2e-incluster/managers.log, what each
// manager replica went through: its container states, its last
// termination, and its logs (the previous container's too), with the
// operator namespace's events; the last lines of each log reach the
// spec's output, which is all a CI run keeps.
var _ = ginkgo.ReportAfterEach(func(ctx ginkgo.SpecContext, report ginkgo.SpecReport) {
	if !report.Failed() || env == nil {
		return
	}
	var out bytes.Buffer
	describeManagers(ctx, &out)
	path := filepath.Join(env.Dir, "managers.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err == nil {
		_, _ = fmt.Fprintf(f, "===== %s\n%s", report.FullText(), out.String())
		_ = f.Close()
	}
	ginkgo.GinkgoWriter.Printf("managers (all of it in %s):\n%s", path, tail(out.String(), 120))
})

func describeManagers(ctx context.Context, out *bytes.Buffer) {
	list := &corev1.PodList{}
	if err := env.Client.List(ctx, list, client.InNamespace(operatorNamespace)); err != nil {
		fmt.Fprintf(out, "listing the operator's pods: %v\n", err)
		return
	}
	for _, p := range list.Items {
		fmt.Fprintf(out, "--- pod %s phase %s node %s deleting=%t\n", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil)
		for _, st := range p.Status.ContainerStatuses {
			fmt.Fprintf(out, "container %s ready=%t restarts=%d image=%s\n", st.Name, st.Ready, st.RestartCount, st.ImageID)
			if t := st.LastTerminationState.Terminated; t != nil {
				fmt.Fprintf(out, "last termination: exit %d reason %s signal %d %s..%s message %q\n",
					t.ExitCode, t.Reason, t.Signal, t.StartedAt.Format("15:04:05"), t.FinishedAt.Format("15:04:05"), t.Message)
			}
			for _, previous := range []bool{true, false} {
				if previous && st.RestartCount == 0 {
					continue
				}
				logs, err := env.Clientset.CoreV1().Pods(p.Namespace).
					GetLogs(p.Name, &corev1.PodLogOptions{Container: st.Name, Previous: previous, Timestamps: true}).DoRaw(ctx)
				fmt.Fprintf(out, "logs (previous=%t, err=%v):\n%s\n", previous, err, tail(string(logs), 200))
			}
		}
	}
	events := &corev1.EventList{}
	if err := env.Client.List(ctx, events, client.InNamespace(operatorNamespace)); err == nil {
		fmt.Fprintln(out, "--- events")
		for _, e := range events.Items {
			fmt.Fprintf(out, "%s %s %s/%s %s: %s (x%d)\n", e.LastTimestamp.Format("15:04:05"), e.Type,
				e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
	}
}

// tail keeps the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}
