package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The manual's sidecarset.yaml and test pod, verbatim.
const (
	sidecarSetYAML = `
# sidecarset.yaml
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: test-sidecarset
spec:
  selector:
    matchLabels:
      app: nginx
  updateStrategy:
    type: RollingUpdate
    maxUnavailable: 1
  containers:
  - name: sidecar1
    image: centos:6.7
    command: ["sleep", "999d"] # do nothing at all
    volumeMounts:
    - name: log-volume
      mountPath: /var/log
  volumes: # this field will be merged into pod.spec.volumes
  - name: log-volume
    emptyDir: {}
`
	testPodYAML = `
apiVersion: v1
kind: Pod
metadata:
  labels:
    app: nginx # matches the SidecarSet's selector
  name: test-pod
spec:
  containers:
  - name: app
    image: nginx:1.15.1
`
)

func (d *demo) createSidecarSet(ctx context.Context) error {
	path, err := d.write("sidecarset.yaml", sidecarSetYAML)
	if err != nil {
		return err
	}
	out, err := d.kubectl(ctx, "apply", "-f", path)
	if err != nil {
		return err
	}
	return mustMatch(out, `sidecarset.apps.kruise.io/test-sidecarset created`, "kubectl apply")
}

func (d *demo) createPod(ctx context.Context) error {
	path, err := d.write("test-pod.yaml", testPodYAML)
	if err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "apply", "-f", path); err != nil {
		return err
	}
	if err := eventually(ctx, 60*time.Second, func() error {
		out, err := d.quiet(ctx, "get", "pod", "test-pod", "--no-headers")
		if err != nil {
			return err
		}
		return mustMatch(out, `^test-pod\s+2/2\s+Running\s+0\s`, "the pod")
	}); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "get", "pod", "test-pod"); err != nil {
		return err
	}
	out, err := d.kubectl(ctx, "get", "pod", "test-pod", "-o", "jsonpath={.spec.containers[*].name}")
	if err != nil {
		return err
	}
	return mustMatch(out, `^sidecar1 app$`, "the pod's containers")
}

func (d *demo) statusAfterInjection(ctx context.Context) error {
	if err := d.waitStatus(ctx, "test-sidecarset", "1 1 1 1 1"); err != nil {
		return err
	}
	out, err := d.shell(ctx, "kubectl get sidecarset test-sidecarset -o yaml | grep -A4 status")
	if err != nil {
		return err
	}
	if err := mustMatch(out, `(?m)^status:$[\s\S]*^  matchedPods: 1$`, "the manual's status command"); err != nil {
		return err
	}
	// grep -A4 shows 4 lines after each line that says "status"; the
	// manual's counts are within the first lines of the status itself.
	full, err := d.quiet(ctx, "get", "sidecarset", "test-sidecarset", "-o", "yaml")
	if err != nil {
		return err
	}
	if err := countsNearTop(full, [4]int64{1, 1, 1, 1}); err != nil {
		return err
	}
	head, _ := StatusHead(full, StatusHeadLines)
	d.printf("    (the first %d lines of the status in kubectl get -o yaml:)\n%s", StatusHeadLines, indent("status:\n"+strings.Join(head, "\n")))
	_, err = d.kubectl(ctx, "get", "sidecarset", "test-sidecarset")
	return err
}

// waitStatus waits until "matched updated ready updatedReady observedGeneration"
// of a SidecarSet's status equals want, and prints it.
func (d *demo) waitStatus(ctx context.Context, name, want string) error {
	jsonpath := "jsonpath={.status.matchedPods}|{.status.updatedPods}|{.status.readyPods}|{.status.updatedReadyPods}|{.status.observedGeneration}"
	var got string
	err := eventually(ctx, 90*time.Second, func() error {
		out, err := d.quiet(ctx, "get", "sidecarset", name, "-o", jsonpath)
		if err != nil {
			return err
		}
		fields := strings.Split(out, "|")
		for i, f := range fields {
			if f == "" {
				fields[i] = "0" // updatedReadyPods is omitted when zero
			}
		}
		got = strings.Join(fields, " ")
		if got != want {
			return fmt.Errorf("status (matched updated ready updatedReady observedGeneration) is %q, want %q", got, want)
		}
		return nil
	})
	if err == nil {
		d.printf("    (status: matched, updated, ready, updatedReady, observedGeneration = %s)\n", got)
	}
	return err
}

func (d *demo) updateImage(ctx context.Context) error {
	// `kubectl edit` as the manual does, with an editor that makes the edit.
	editor := filepath.Join(d.Dir, "edit-image.sh")
	script := "#!/bin/sh\nsed -i 's#image: centos:6.7#image: centos:7#' \"$1\"\n"
	if err := os.WriteFile(editor, []byte(script), 0o755); err != nil {
		return err
	}
	d.printf("    (KUBE_EDITOR replaces image: centos:6.7 with image: centos:7)\n")
	out, err := d.kubectlWithEnv(ctx, []string{"KUBE_EDITOR=" + editor}, "edit", "sidecarsets", "test-sidecarset")
	if err != nil {
		return err
	}
	return mustMatch(out, `sidecarset.apps.kruise.io/test-sidecarset edited`, "kubectl edit")
}

func (d *demo) upgradedInPlace(ctx context.Context) error {
	if err := eventually(ctx, 60*time.Second, func() error {
		out, err := d.quiet(ctx, "get", "pod", "test-pod", "-o",
			"jsonpath={range .status.containerStatuses[*]}{.name}={.image}/{.restartCount}/{.ready} {end}")
		if err != nil {
			return err
		}
		return mustMatch(out, `sidecar1=docker.io/library/centos:7/1/true app=docker.io/library/nginx:1.15.1/0/true`, "container statuses")
	}); err != nil {
		return err
	}
	if _, err := d.shell(ctx, "kubectl get pods | grep test-pod"); err != nil {
		return err
	}
	out, err := d.shell(ctx, "kubectl get pods test-pod -o yaml | grep 'image: centos'")
	if err != nil {
		return err
	}
	if err := mustMatch(out, `image: centos:7`, "the pod spec"); err != nil {
		return err
	}
	out, err = d.kubectl(ctx, "describe", "pods", "test-pod")
	if err != nil {
		return err
	}
	if err := mustMatch(out, `Killing .*Container definition changed, will be restarted`, "the pod's events"); err != nil {
		return err
	}
	d.printf("    (sidecar1 restarted once with centos:7; the app container never restarted)\n")
	return d.waitStatus(ctx, "test-sidecarset", "1 1 1 1 2")
}

// shell runs a command line that pipes kubectl into grep, as the manual
// writes it.
func (d *demo) shell(ctx context.Context, line string) (string, error) {
	d.printf("$ %s\n", line)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-c", line)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+d.Kubeconfig, "PATH="+filepath.Dir(d.Kubectl)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	d.printf("%s", indent(string(out)))
	if err != nil {
		return string(out), fmt.Errorf("%s: %w", line, err)
	}
	return string(out), nil
}

const (
	rolloutSidecarSetYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: demo-rollout
spec:
  selector:
    matchLabels:
      app: demo-web
  containers:
  - name: log-agent
    image: busybox:1.36
  updateStrategy:
    type: RollingUpdate
    partition: 6
    maxUnavailable: 2
`
	rolloutDeploymentYAML = `
apiVersion: apps/v1
kind: Deployment
metadata:
  name: demo-web
spec:
  replicas: 10
  selector:
    matchLabels:
      app: demo-web
  template:
    metadata:
      labels:
        app: demo-web
    spec:
      containers:
      - name: web
        image: nginx:1.25
`
)

func (d *demo) partitionRollout(ctx context.Context) error {
	// The SidecarSet first, so that the Deployment's pods get the sidecar.
	ss, err := d.write("sidecarset-rollout.yaml", rolloutSidecarSetYAML)
	if err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "apply", "-f", ss); err != nil {
		return err
	}
	if err := d.waitStatus(ctx, "demo-rollout", "0 0 0 0 1"); err != nil {
		return err
	}
	deploy, err := d.write("deployment.yaml", rolloutDeploymentYAML)
	if err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "apply", "-f", deploy); err != nil {
		return err
	}
	if err := d.waitStatus(ctx, "demo-rollout", "10 10 10 10 1"); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "patch", "sidecarset", "demo-rollout", "--type=json",
		"-p", `[{"op":"replace","path":"/spec/containers/0/image","value":"busybox:1.37"}]`); err != nil {
		return err
	}
	// Watch the rollout: never more than maxUnavailable (2) upgraded pods
	// unavailable at once, and the partition keeps 6 pods on the old image.
	peak := 0
	err = eventually(ctx, 120*time.Second, func() error {
		out, err := d.quiet(ctx, "get", "pods", "-l", "app=demo-web", "-o",
			`jsonpath={range .items[*]}{.spec.containers[0].image}|{.status.containerStatuses[?(@.name=="log-agent")].image}|{.status.containerStatuses[?(@.name=="log-agent")].ready}{"\n"}{end}`)
		if err != nil {
			return err
		}
		updated, pending := 0, 0
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			f := strings.Split(line, "|")
			if len(f) != 3 || f[0] != "busybox:1.37" {
				continue
			}
			updated++
			if f[1] != "docker.io/library/busybox:1.37" || f[2] != "true" {
				pending++
			}
		}
		peak = max(peak, pending)
		if peak > 2 {
			return fmt.Errorf("%d upgraded pods are unavailable at once, maxUnavailable is 2", peak)
		}
		if updated != 4 || pending != 0 {
			return fmt.Errorf("%d pods upgraded (%d still restarting), want 4 done", updated, pending)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.printf("    (4 of 10 pods upgraded, at most %d at a time; partition 6 keeps 6 on the old image)\n", peak)
	if err := d.waitStatus(ctx, "demo-rollout", "10 4 10 4 2"); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "get", "sidecarset", "demo-rollout"); err != nil {
		return err
	}
	out, err := d.kubectl(ctx, "get", "sidecarset", "demo-rollout", "-o",
		`jsonpath={range .status.conditions[*]}{.type}={.status} {.reason}: {.message}{"\n"}{end}`)
	if err != nil {
		return err
	}
	if err := mustMatch(out, `Progressing=False PartitionHeld`, "the rollout conditions"); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "patch", "sidecarset", "demo-rollout", "--type=merge", "-p", `{"spec":{"updateStrategy":{"partition":0}}}`); err != nil {
		return err
	}
	return d.waitStatus(ctx, "demo-rollout", "10 10 10 10 3")
}

const (
	metadataYAML = `
apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: demo-metadata
  labels:
    sidecar: log-agent
spec:
  selector:
    matchLabels:
      app: demo-metadata
  containers:
  - name: oom-agent
    image: busybox:1.36
  patchPodMetadata:
  - annotations:
      oom-score: '{"log-agent": 1}'
      custom.example.com/sidecar-configuration: '{"command": "/home/admin/bin/start.sh", "log-level": "3"}'
    patchPolicy: MergePatchJson
  - annotations:
      apps.kruise.io/container-launch-priority: Ordered
    patchPolicy: Overwrite
`
	whitelistYAML = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: kruise-configuration
  namespace: kruise-system
data:
  "SidecarSet_PatchPodMetadata_WhiteList": |
    {
      "rules": [
        {
          "selector":{
            "matchLabels":{
              "sidecar":"log-agent"
            }
          },
          "allowedAnnotationKeyExprs": [
            "^apps.kruise.io/container-launch-priority$",
            "^oom-score$",
            "^custom.example.com/sidecar-configuration$"
          ]
        }
      ]
    }
`
	metadataPodYAML = `
apiVersion: v1
kind: Pod
metadata:
  name: demo-metadata
  labels:
    app: demo-metadata
  annotations:
    oom-score: '{"main": 2}'
spec:
  containers:
  - name: main
    image: nginx:1.25
`
)

func (d *demo) patchPodMetadata(ctx context.Context) error {
	ss, err := d.write("sidecarset-metadata.yaml", metadataYAML)
	if err != nil {
		return err
	}
	out, err := d.kubectl(ctx, "apply", "-f", ss)
	if err == nil {
		return fmt.Errorf("the SidecarSet was accepted without a whitelist")
	}
	if err := mustMatch(out, `SidecarSet patch metadata whitelist not found`, "the rejection"); err != nil {
		return err
	}
	cm, err := d.write("kruise-configuration.yaml", whitelistYAML)
	if err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "apply", "-f", cm); err != nil {
		return err
	}
	d.printf("    (no restart: the operator reloads the whitelist when the ConfigMap changes)\n")
	if err := eventually(ctx, 30*time.Second, func() error {
		_, err := d.quiet(ctx, "apply", "-f", ss)
		return err
	}); err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "apply", "-f", ss); err != nil {
		return err
	}
	pod, err := d.write("pod-metadata.yaml", metadataPodYAML)
	if err != nil {
		return err
	}
	if _, err := d.kubectl(ctx, "apply", "-f", pod); err != nil {
		return err
	}
	out, err = d.kubectl(ctx, "get", "pod", "demo-metadata", "-o",
		`jsonpath={.metadata.annotations.oom-score}{"\n"}{.metadata.annotations.apps\.kruise\.io/container-launch-priority}{"\n"}{.metadata.annotations.custom\.example\.com/sidecar-configuration}`)
	if err != nil {
		return err
	}
	want := []string{`{"log-agent":1,"main":2}`, `Ordered`, `{"command": "/home/admin/bin/start.sh", "log-level": "3"}`}
	got := strings.Split(strings.TrimSpace(out), "\n")
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		return fmt.Errorf("pod annotations %s, want %s", strconv.Quote(out), strconv.Quote(strings.Join(want, "\n")))
	}
	return nil
}
