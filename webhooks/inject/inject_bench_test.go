package inject

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// BenchmarkInject measures one pod admission against 1 and 1000 candidate
// SidecarSets, exactly one of which matches.
func BenchmarkInject(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			match := newSidecarSet("log-agent", "web", "log-agent")
			match.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "logs", MountPath: "/logs"}}
			match.Spec.Volumes = []corev1.Volume{{Name: "logs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			cands := []Candidate{candidateOf(match)}
			for i := 1; i < n; i++ {
				cands = append(cands, candidateOf(newSidecarSet(fmt.Sprintf("other-%04d", i), fmt.Sprintf("app-%d", i), "agent")))
			}
			in := Input{Pod: newPod("web", "web", "worker"), Namespace: Namespace{Name: "default"}, Candidates: cands, Now: testNow}
			b.ReportAllocs()
			for b.Loop() {
				out, err := Inject(in)
				if err != nil || len(out.Injected) != 1 {
					b.Fatalf("Inject = %v, %v; want one SidecarSet injected", out.Injected, err)
				}
			}
		})
	}
}
