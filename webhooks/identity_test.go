package webhooks

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	appsv1beta1 "github.com/sidecarset-operator/sidecarset-operator/api/v1beta1"
	"github.com/sidecarset-operator/sidecarset-operator/policy/authority"
)

// identitiesAfter runs the defaulting webhook with a cache holding
// namespace team-a (UID a-1) and SidecarSet mesh (UID m-1), and an API
// server that also has namespace team-new (UID n-1), and returns the two
// records of the patched object ("-" when absent).
func identitiesAfter(t *testing.T, version string, op admissionv1.Operation, object, old string) [2]string {
	t.Helper()
	scheme := emptyScheme()
	teamA := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", UID: "a-1"}}
	cache := fake.NewClientBuilder().WithScheme(scheme).WithObjects(teamA,
		&appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", UID: "m-1"}}).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(teamA.DeepCopy(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-new", UID: "n-1"}}).Build()
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Operation: op, Kind: metav1.GroupVersionKind{Group: "apps.kruise.io", Version: version, Kind: "SidecarSet"},
		Object: runtime.RawExtension{Raw: []byte(object)},
	}}
	if old != "" {
		req.OldObject = runtime.RawExtension{Raw: []byte(old)}
	}
	resp := SidecarSetDefaulter{Authorizer: holds(authority.All), Reader: cache, LiveReader: live}.Handle(t.Context(), req)
	if !resp.Allowed {
		t.Fatalf("defaulting denied: %v", resp.Result)
	}
	out := patched(t, resp, []byte(object))
	var got metav1.PartialObjectMetadata
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	records := [2]string{"-", "-"}
	for i, key := range []string{appsv1beta1.NamespaceUIDsAnnotation, appsv1beta1.CanaryBaseUIDAnnotation} {
		if v, ok := got.Annotations[key]; ok {
			records[i] = v
		}
	}
	return records
}

// The records of what a SidecarSet was judged against (issue 38, N5 and
// N7): written by the webhook on every write the author makes, kept on the
// operator's pause and the garbage collector's writes, never the author's.
func TestSidecarSetDefaulter_RecordsIdentities(t *testing.T) {
	t.Parallel()
	const (
		named     = `{"metadata":{"name":"s"ANN},"spec":{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"In","values":["team-a","team-new","team-gone"]}]},"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:IMG"}]PAUSE}}`
		alpha     = `{"metadata":{"name":"s"},"spec":{"namespace":"team-a","selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:1"}]}}`
		everyNs   = `{"metadata":{"name":"s"ANN},"spec":{"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:1"}]}}`
		canary    = `{"metadata":{"name":"s","annotations":{"apps.kruise.io/sidecarset-canary":"true","apps.kruise.io/sidecarset-base":"BASE"RECORD}},"spec":{"selector":{"matchLabels":{"app":"web"}},"containers":[{"name":"c","image":"c:1"}],"updateStrategy":{"type":"NotUpdate"}}}`
		oldRecord = `{"team-a":"a-0"}`
		recorded  = `{"team-a":"a-1","team-new":"n-1"}`
	)
	obj := func(tmpl, ann, img, pause string) string {
		r := strings.NewReplacer("ANN", ann, "IMG", img, "PAUSE", pause)
		return r.Replace(tmpl)
	}
	withRecord := func(record string) string {
		raw, _ := json.Marshal(record)
		return `,"annotations":{"sidecarset-operator.dev/namespace-uids":` + string(raw) + `}`
	}
	canaryOf := func(base, record string) string {
		if record != "" {
			record = `,"sidecarset-operator.dev/canary-base-uid":"` + record + `"`
		}
		return strings.NewReplacer("BASE", base, "RECORD", record).Replace(canary)
	}
	paused := `,"updateStrategy":{"paused":true}`
	gc := func(o string) string {
		return strings.Replace(o, `"name":"s"`, `"name":"s","finalizers":["foregroundDeletion"]`, 1)
	}
	tests := []struct {
		name        string
		version     string
		op          admissionv1.Operation
		object, old string
		want        [2]string
	}{
		{name: "a create records the named namespaces that exist, from the API server when the cache lacks one",
			op: admissionv1.Create, object: obj(named, "", "1", ""), want: [2]string{recorded, "-"}},
		{name: "a v1alpha1 spec.namespace is recorded as the selector it is stored as",
			version: "v1alpha1", op: admissionv1.Create, object: alpha, want: [2]string{`{"team-a":"a-1"}`, "-"}},
		{name: "a record the author writes is overwritten",
			op: admissionv1.Create, object: obj(named, withRecord(`{"team-a":"forged"}`), "1", ""), want: [2]string{recorded, "-"}},
		{name: "a SidecarSet of every namespace records none, whatever the author wrote",
			op: admissionv1.Create, object: obj(everyNs, withRecord(`{"team-a":"forged"}`), "1", ""), want: [2]string{"-", "-"}},
		{name: "an update of the content records the namespaces as they are now",
			op: admissionv1.Update, object: obj(named, withRecord(oldRecord), "2", ""), old: obj(named, withRecord(oldRecord), "1", ""),
			want: [2]string{recorded, "-"}},
		{name: "an update that changes nothing records them again (writing the SidecarSet again re-judges it)",
			op: admissionv1.Update, object: obj(named, withRecord(oldRecord), "1", ""), old: obj(named, withRecord(oldRecord), "1", ""),
			want: [2]string{recorded, "-"}},
		{name: "the operator's pause keeps the record",
			op: admissionv1.Update, object: obj(named, withRecord(oldRecord), "1", paused), old: obj(named, withRecord(oldRecord), "1", ""),
			want: [2]string{oldRecord, "-"}},
		{name: "a pause that also changes the record keeps the old one",
			op: admissionv1.Update, object: obj(named, withRecord(recorded), "1", paused), old: obj(named, withRecord(oldRecord), "1", ""),
			want: [2]string{oldRecord, "-"}},
		{name: "a pause of a SidecarSet without a record adds none",
			op: admissionv1.Update, object: obj(named, "", "1", paused), old: obj(named, "", "1", ""), want: [2]string{"-", "-"}},
		{name: "the garbage collector's finalizer keeps the record",
			op: admissionv1.Update, object: gc(obj(named, withRecord(oldRecord), "1", "")), old: obj(named, withRecord(oldRecord), "1", ""),
			want: [2]string{oldRecord, "-"}},
		{name: "a canary records its base's UID", op: admissionv1.Create, object: canaryOf("mesh", ""), want: [2]string{"-", "m-1"}},
		{name: "a canary's forged base record is overwritten", op: admissionv1.Create, object: canaryOf("mesh", "forged"), want: [2]string{"-", "m-1"}},
		{name: "a canary of a missing base records none (the validating webhook refuses it)",
			op: admissionv1.Create, object: canaryOf("absent", "forged"), want: [2]string{"-", "-"}},
		{name: "a canary written again records the base as it is now",
			op: admissionv1.Update, object: canaryOf("mesh", "m-0"), old: canaryOf("mesh", "m-0"), want: [2]string{"-", "m-1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			version := tc.version
			if version == "" {
				version = "v1beta1"
			}
			if diff := cmp.Diff(tc.want, identitiesAfter(t, version, tc.op, tc.object, tc.old)); diff != "" {
				t.Errorf("records [namespaces, base] (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckRecordedBase(t *testing.T) {
	t.Parallel()
	base := &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh", UID: "m-2"}}
	canary := func(uid string) *appsv1beta1.SidecarSet {
		return &appsv1beta1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "mesh-canary", Annotations: map[string]string{
			appsv1beta1.SidecarSetCanaryAnnotation: "true", appsv1beta1.SidecarSetBaseAnnotation: "mesh",
			appsv1beta1.CanaryBaseUIDAnnotation: uid}}}
	}
	if err := checkRecordedBase(canary("m-2"), base); err != nil {
		t.Errorf("the base recorded is judged: %v", err)
	}
	err := checkRecordedBase(canary("m-1"), base)
	want := `Operation cannot be fulfilled on sidecarsets.apps.kruise.io "mesh-canary": metadata.annotations[sidecarset-operator.dev/canary-base-uid]: ` +
		`the canary was recorded against SidecarSet "mesh" of UID "m-1", and the one now of that name has UID "m-2" ` +
		`(it was deleted and created again meanwhile); write the canary again`
	if !apierrors.IsConflict(err) || err.Error() != want {
		t.Errorf("error = %v, want a conflict %q", err, want)
	}
	// Judged again when the record changes, not on every write.
	if !canaryJudged(canary("m-2"), canary("m-1")) || canaryJudged(canary("m-2"), canary("m-2")) || !canaryJudged(canary("m-2"), nil) {
		t.Error("canaryJudged: want a create and a new record judged, the same record not")
	}
}

// emptyScheme knows the built-in kinds and SidecarSets.
func emptyScheme() *runtime.Scheme {
	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(appsv1beta1.AddToScheme(scheme))
	return scheme
}
