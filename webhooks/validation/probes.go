package validation

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateProbesAndLifecycle checks the probes and lifecycle hooks of a
// sidecar. A plain init container (not a native sidecar) may have neither:
// it runs to completion before the pod starts.
func validateProbesAndLifecycle(c *corev1.Container, plainInit bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	probes := []struct {
		name       string
		probe      *corev1.Probe
		oneSuccess bool // liveness and startup probes need successThreshold 1
	}{
		{"livenessProbe", c.LivenessProbe, true},
		{"readinessProbe", c.ReadinessProbe, false},
		{"startupProbe", c.StartupProbe, true},
	}
	for _, p := range probes {
		if p.probe == nil {
			continue
		}
		pp := path.Child(p.name)
		if plainInit {
			errs = append(errs, forbiddenOnPlainInit(pp))
			continue
		}
		errs = append(errs, validateProbe(p.probe, p.oneSuccess, pp)...)
	}
	if c.Lifecycle == nil {
		return errs
	}
	lp := path.Child("lifecycle")
	if plainInit {
		return append(errs, forbiddenOnPlainInit(lp))
	}
	if h := c.Lifecycle.PostStart; h != nil {
		errs = append(errs, validateLifecycleHandler(h, lp.Child("postStart"))...)
	}
	if h := c.Lifecycle.PreStop; h != nil {
		errs = append(errs, validateLifecycleHandler(h, lp.Child("preStop"))...)
	}
	return errs
}

func forbiddenOnPlainInit(path *field.Path) *field.Error {
	return field.Forbidden(path, "may not be set on an init container without restartPolicy: Always, which runs to "+
		"completion before the pod starts: remove it, or make the init container a native sidecar")
}

func validateProbe(p *corev1.Probe, oneSuccess bool, path *field.Path) field.ErrorList {
	errs := exactlyOne(&p.ProbeHandler, path)
	errs = append(errs, validateHandlerPorts(p.HTTPGet, p.TCPSocket, path)...)
	if p.GRPC != nil {
		for _, msg := range utilvalidation.IsValidPortNum(int(p.GRPC.Port)) {
			errs = append(errs, field.Invalid(path.Child("grpc", "port"), p.GRPC.Port, msg))
		}
	}
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds},
		{"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.value), path.Child(f.name))...)
	}
	if oneSuccess && p.SuccessThreshold > 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold,
			"must be 1 for liveness and startup probes"))
	}
	return errs
}

func validateLifecycleHandler(h *corev1.LifecycleHandler, path *field.Path) field.ErrorList {
	errs := exactlyOne(h, path)
	errs = append(errs, validateHandlerPorts(h.HTTPGet, h.TCPSocket, path)...)
	if h.Sleep != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(h.Sleep.Seconds, path.Child("sleep", "seconds"))...)
	}
	return errs
}

func validateHandlerPorts(httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if httpGet != nil {
		errs = append(errs, validatePortRef(httpGet.Port, path.Child("httpGet", "port"))...)
	}
	if tcp != nil {
		errs = append(errs, validatePortRef(tcp.Port, path.Child("tcpSocket", "port"))...)
	}
	return errs
}

// validatePortRef checks a port given by number or by the name of a
// container port.
func validatePortRef(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var msgs []string
	if port.Type == intstr.Int {
		msgs = utilvalidation.IsValidPortNum(port.IntValue())
	} else {
		msgs = utilvalidation.IsValidPortName(port.StrVal)
	}
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(path, port.String(), fmt.Sprintf("must be a port number or a port name: %s", msg)))
	}
	return errs
}
