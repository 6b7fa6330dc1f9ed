// Package kubernetes holds the tests of the manifests in this directory:
// each is decoded strictly against the Kubernetes API types (a misspelled
// field fails), the QoS classes are the ones the experiments need, and each
// container's capabilities are what docs/probes.md says its rig commands need.
// It has no other code: the rig binary does not link the API types.
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/netlab/netlabtest"
	"github.com/rig-project/rig/internal/scenario"
)

// kustomization is the part of kustomize's Kustomization these manifests
// use; anything else in the file is an error.
type kustomization struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Labels     []struct {
		Pairs            map[string]string `json:"pairs"`
		IncludeTemplates bool              `json:"includeTemplates"`
	} `json:"labels"`
	Resources []string `json:"resources"`
	Images    []struct {
		Name    string `json:"name"`
		NewName string `json:"newName"`
		NewTag  string `json:"newTag"`
	} `json:"images"`
}

// object is one decoded manifest: its pod template, whatever the kind.
type object struct {
	file, kind, name string
	meta             map[string]string // the pod's annotations
	labels           map[string]string // the object's own labels
	podLabels        map[string]string // the pod's (a Pod's own, or its template's)
	spec             *corev1.PodSpec
}

// decode decodes one manifest strictly into the API type of its kind.
func decode(file string, b []byte) (*object, error) {
	var tm struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(b, &tm); err != nil {
		return nil, err
	}
	o := &object{file: file, kind: tm.Kind}
	switch tm.Kind {
	case "Namespace":
		var ns corev1.Namespace
		if err := yaml.UnmarshalStrict(b, &ns); err != nil {
			return nil, err
		}
		o.name, o.labels = ns.Name, ns.Labels
	case "Pod":
		var p corev1.Pod
		if err := yaml.UnmarshalStrict(b, &p); err != nil {
			return nil, err
		}
		o.name, o.meta, o.podLabels, o.spec = p.Name, p.Annotations, p.Labels, &p.Spec
	case "Deployment":
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(b, &d); err != nil {
			return nil, err
		}
		o.name, o.meta, o.podLabels, o.spec = d.Name, d.Spec.Template.Annotations, d.Spec.Template.Labels, &d.Spec.Template.Spec
	case "DaemonSet":
		var d appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(b, &d); err != nil {
			return nil, err
		}
		o.name, o.meta, o.podLabels, o.spec = d.Name, d.Spec.Template.Annotations, d.Spec.Template.Labels, &d.Spec.Template.Spec
	default:
		return nil, fmt.Errorf("kind %q: the test knows Namespace, Pod, Deployment, DaemonSet", tm.Kind)
	}
	return o, nil
}

// docs splits a multi-document YAML stream.
func docs(b []byte) [][]byte {
	var out [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(b), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(d, "")) != "" {
			out = append(out, []byte(d))
		}
	}
	return out
}

func load(t *testing.T) (*kustomization, map[string]*object) {
	t.Helper()
	b, err := os.ReadFile("kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.UnmarshalStrict(b, &k); err != nil {
		t.Fatalf("kustomization.yaml: %v", err)
	}
	files, _ := filepath.Glob("*.yaml")
	objs := map[string]*object{}
	for _, f := range files {
		if f == "kustomization.yaml" {
			continue
		}
		if !slices.Contains(k.Resources, f) {
			t.Errorf("%s is not among the kustomization's resources", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, d := range docs(b) {
			o, err := decode(f, d)
			if err != nil {
				t.Errorf("%s document %d: %v", f, i+1, err)
				continue
			}
			objs[o.name] = o
		}
	}
	for _, r := range k.Resources {
		if _, err := os.Stat(r); err != nil {
			t.Errorf("kustomization resource %s: %v", r, err)
		}
	}
	return &k, objs
}

func TestManifestsDecodeStrictly(t *testing.T) {
	k, objs := load(t)
	if k.Kind != "Kustomization" || k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Namespace != "rig" {
		t.Errorf("kustomization: %+v", k)
	}
	var names []string
	for n := range objs {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"rig", "rig-host-agent", "rig-noisy-neighbour", "rig-responder-pinned", "rig-responder-shared", "rig-sender"}
	if !slices.Equal(names, want) {
		t.Fatalf("objects %v, want %v", names, want)
	}
	for _, o := range objs {
		if o.spec == nil {
			continue
		}
		for _, c := range o.spec.Containers {
			if c.Image != "rig" || !slices.ContainsFunc(k.Images, func(i struct {
				Name    string `json:"name"`
				NewName string `json:"newName"`
				NewTag  string `json:"newTag"`
			}) bool {
				return i.Name == c.Image
			}) {
				t.Errorf("%s: image %q is not the one the kustomization sets (rig)", o.file, c.Image)
			}
		}
	}
}

// The decoder is strict: a misspelled field, at the top or deep in a
// container, is an error, not a silently ignored line.
func TestMisspelledFieldFails(t *testing.T) {
	b, err := os.ReadFile("responder-pinned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, typo := range [][2]string{{"hostNetwork:", "hostNetwrok:"}, {"capabilities:", "capabilites:"}, {"limits:", "limit:"}} {
		bad := bytes.Replace(b, []byte(typo[0]), []byte(typo[1]), 1)
		if bytes.Equal(bad, b) {
			t.Fatalf("%s not in the file", typo[0])
		}
		if _, err := decode("bad.yaml", bad); err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: %v, want an unknown-field error", typo[1], err)
		}
	}
}

// qos is the pod's QoS class as the kubelet computes it: Guaranteed when
// every container has CPU and memory limits and its requests equal them
// (a request left out defaults to the limit), BestEffort when no container
// has any request or limit, Burstable otherwise.
func qos(s *corev1.PodSpec) corev1.PodQOSClass {
	cs := append(slices.Clone(s.InitContainers), s.Containers...)
	guaranteed, set := true, false
	for _, c := range cs {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			lim, hasLim := c.Resources.Limits[r]
			req, hasReq := c.Resources.Requests[r]
			set = set || hasLim || hasReq
			if !hasLim || (hasReq && req.Cmp(lim) != 0) {
				guaranteed = false
			}
		}
	}
	switch {
	case !set:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func TestQoS(t *testing.T) {
	_, objs := load(t)
	for _, c := range []struct {
		name      string
		qos       corev1.PodQOSClass
		intCPU    bool // whole CPUs: exclusive CPUs from the static CPU manager
		cpuLimit  bool // a CPU limit, hence a CFS quota (none in the shared pool)
		hostNet   bool
		nodeLabel string
	}{
		{"rig-responder-pinned", corev1.PodQOSGuaranteed, true, true, true, "latency"},
		{"rig-sender", corev1.PodQOSGuaranteed, true, true, true, "sender"},
		{"rig-responder-shared", corev1.PodQOSBurstable, false, false, true, "latency"},
		{"rig-noisy-neighbour", corev1.PodQOSBurstable, false, false, false, "latency"},
		{"rig-host-agent", corev1.PodQOSBurstable, false, false, true, "latency"},
	} {
		o := objs[c.name]
		if o == nil {
			t.Errorf("%s: missing", c.name)
			continue
		}
		if q := qos(o.spec); q != c.qos {
			t.Errorf("%s: QoS %s, want %s", c.name, q, c.qos)
		}
		for _, ct := range o.spec.Containers {
			lim, has := ct.Resources.Limits[corev1.ResourceCPU]
			if has != c.cpuLimit {
				t.Errorf("%s: CPU limit %v, want one: %v", c.name, lim.String(), c.cpuLimit)
			}
			if c.intCPU && (lim.MilliValue()%1000 != 0 || lim.Cmp(resource.MustParse("1")) < 0) {
				t.Errorf("%s: CPU %s is not a whole number of CPUs: the static CPU manager gives it none of its own", c.name, lim.String())
			}
		}
		if o.spec.HostNetwork != c.hostNet {
			t.Errorf("%s: hostNetwork %v", c.name, o.spec.HostNetwork)
		}
		if o.spec.HostNetwork && o.spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
			t.Errorf("%s: hostNetwork without dnsPolicy ClusterFirstWithHostNet", c.name)
		}
		if o.spec.NodeSelector["rig.dev/role"] != c.nodeLabel {
			t.Errorf("%s: nodeSelector %v, want rig.dev/role: %s", c.name, o.spec.NodeSelector, c.nodeLabel)
		}
	}
	// The shared responder runs on the pinned one's node: both answer the
	// same requests under the same node noise.
	pinned := objs["rig-responder-pinned"]
	var terms []corev1.PodAffinityTerm
	if a := objs["rig-responder-shared"].spec.Affinity; a != nil && a.PodAffinity != nil {
		terms = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	if len(terms) != 1 || terms[0].TopologyKey != "kubernetes.io/hostname" || terms[0].LabelSelector == nil ||
		len(terms[0].LabelSelector.MatchLabels) != 1 || terms[0].LabelSelector.MatchLabels["rig.dev/placement"] != "pinned" ||
		pinned.podLabels["rig.dev/placement"] != "pinned" {
		t.Errorf("rig-responder-shared: required podAffinity %+v, want the node (kubernetes.io/hostname) of the pod labelled rig.dev/placement: pinned (%v)", terms, pinned.podLabels)
	}
}

// rigPods are the pods rig runs its agents in.
var rigPods = []string{"rig-responder-pinned", "rig-responder-shared", "rig-sender"}

// Each rig pod's container gets its requests and limits through the
// downward API, in the variables rig check reads to tell CPUs of its own
// from the shared pool (CPU in millicores, memory in bytes).
func TestPodResourcesInTheEnvironment(t *testing.T) {
	_, objs := load(t)
	want := map[string][2]string{hostinfo.EnvCPURequest: {"requests.cpu", "1m"}, hostinfo.EnvCPULimit: {"limits.cpu", "1m"},
		hostinfo.EnvMemRequest: {"requests.memory", ""}, hostinfo.EnvMemLimit: {"limits.memory", ""}}
	for _, name := range rigPods {
		for _, c := range objs[name].spec.Containers {
			got := map[string][2]string{}
			for _, e := range c.Env {
				if r := e.ValueFrom; r != nil && r.ResourceFieldRef != nil && r.ResourceFieldRef.ContainerName == "" {
					div := ""
					if !r.ResourceFieldRef.Divisor.IsZero() {
						div = r.ResourceFieldRef.Divisor.String()
					}
					got[e.Name] = [2]string{r.ResourceFieldRef.Resource, div}
				}
			}
			for k, v := range want {
				if got[k] != v {
					t.Errorf("%s/%s: env %s from %v, want resourceFieldRef %s divisor %q", name, c.Name, k, got[k], v[0], v[1])
				}
			}
		}
	}
}

// The kubectl test double (netlabtest.Kubectl), through which the tests
// run scenarios in emulated pods, gives each rig pod the capabilities its
// manifest does.
func TestTheDoubleGrantsWhatThePodsDo(t *testing.T) {
	_, objs := load(t)
	want := slices.Sorted(slices.Values(netlabtest.PodCaps))
	for _, name := range rigPods {
		for _, c := range objs[name].spec.Containers {
			var add []string
			for _, a := range c.SecurityContext.Capabilities.Add {
				add = append(add, string(a))
			}
			if slices.Sort(add); !slices.Equal(add, want) {
				t.Errorf("%s/%s adds %v; the kubectl test double's pods have %v (netlabtest.PodCaps)", name, c.Name, add, want)
			}
		}
	}
}

// Each rig pod keeps its agents' journal on the node, in a directory of
// its own: with hostNetwork what they change is the node's, and `rig
// restore` must find the journal after the pod was replaced.
func TestJournalsOnTheNode(t *testing.T) {
	_, objs := load(t)
	for _, name := range rigPods {
		o := objs[name]
		var vol *corev1.Volume
		for i := range o.spec.Volumes {
			if o.spec.Volumes[i].Name == "state" {
				vol = &o.spec.Volumes[i]
			}
		}
		if vol == nil || vol.HostPath == nil || vol.HostPath.Path != "/var/lib/rig/pods/"+name || vol.HostPath.Type == nil || *vol.HostPath.Type != corev1.HostPathDirectoryOrCreate {
			t.Errorf("%s: state volume %+v, want hostPath /var/lib/rig/pods/%s (DirectoryOrCreate)", name, vol, name)
		}
		for _, c := range o.spec.Containers {
			if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "state" && m.MountPath == "/var/lib/rig" }) {
				t.Errorf("%s/%s: the state volume is not rig's state directory /var/lib/rig", name, c.Name)
			}
		}
	}
}

// The namespace admits the privileged host agent under Pod Security
// admission, and no container replaces the image's entrypoint (tini,
// which reaps what kubectl exec leaves behind).
func TestPodSecurityAndEntrypoint(t *testing.T) {
	_, objs := load(t)
	for _, mode := range []string{"enforce", "warn", "audit"} {
		if l := objs["rig"].labels["pod-security.kubernetes.io/"+mode]; l != "privileged" {
			t.Errorf("namespace rig: pod-security.kubernetes.io/%s %q, want privileged", mode, l)
		}
	}
	for _, o := range objs {
		if o.spec == nil {
			continue
		}
		for _, c := range o.spec.Containers {
			if len(c.Command) > 0 || len(c.Args) == 0 {
				t.Errorf("%s/%s: command %q args %q: set args only, so that the image's entrypoint (tini) stays PID 1", o.name, c.Name, c.Command, c.Args)
			}
		}
	}
}

// privilegesDoc holds the table "Privileges each command needs".
const privilegesDoc = "../../docs/probes.md"

// privileges reads the "Privileges each command needs" table:
// command ("respond", "nicctl set") → capabilities, or "privileged".
func privileges(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(privilegesDoc)
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "## Privileges each command needs\n")
	if !ok {
		t.Fatalf("%s has no Privileges section", privilegesDoc)
	}
	cmdRE := regexp.MustCompile("`rig ([a-z ]+)`")
	capRE := regexp.MustCompile("`([A-Z_]+)`")
	out := map[string][]string{}
	for _, line := range strings.Split(sec, "\n") {
		if strings.HasPrefix(line, "#") {
			break
		}
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.Contains(cells[1], "`rig ") {
			continue
		}
		var caps []string
		switch strings.TrimSpace(cells[2]) {
		case "none":
			caps = []string{}
		case "privileged":
			caps = []string{"privileged"}
		default:
			for _, m := range capRE.FindAllStringSubmatch(cells[2], -1) {
				caps = append(caps, m[1])
			}
			if len(caps) == 0 {
				t.Fatalf("%s Privileges row %q: no capability, none or privileged", privilegesDoc, line)
			}
		}
		for _, m := range cmdRE.FindAllStringSubmatch(cells[1], -1) {
			out[m[1]] = caps
		}
	}
	if len(out) < 8 {
		t.Fatalf("%s Privileges table: %d commands: %v", privilegesDoc, len(out), out)
	}
	return out
}

// Every container grants exactly the capabilities docs/probes.md says its rig
// commands need (all others dropped), or is privileged when one of them
// needs the host.
func TestCapabilitiesMatchTheDocs(t *testing.T) {
	need := privileges(t)
	_, objs := load(t)
	for _, o := range objs {
		if o.spec == nil {
			continue
		}
		ann, ok := o.meta["rig.dev/commands"]
		if !ok {
			t.Errorf("%s: no rig.dev/commands annotation saying which rig commands it runs", o.name)
			continue
		}
		want, priv := map[string]bool{}, false
		for _, cmd := range strings.Split(ann, ",") {
			cmd = strings.TrimSpace(cmd)
			if cmd == "" {
				continue
			}
			caps, ok := need[cmd]
			if !ok {
				t.Errorf("%s: command %q is not in the Privileges table of %s", o.name, cmd, privilegesDoc)
			}
			for _, c := range caps {
				if c == "privileged" {
					priv = true
				} else {
					want[c] = true
				}
			}
		}
		for _, c := range o.spec.Containers {
			sc := c.SecurityContext
			isPriv := sc != nil && sc.Privileged != nil && *sc.Privileged
			if isPriv != priv {
				t.Errorf("%s/%s: privileged %v, but its commands (%s) need privileged: %v", o.name, c.Name, isPriv, ann, priv)
			}
			if priv {
				continue
			}
			var add, drop []string
			if sc != nil && sc.Capabilities != nil {
				for _, a := range sc.Capabilities.Add {
					add = append(add, string(a))
				}
				for _, d := range sc.Capabilities.Drop {
					drop = append(drop, string(d))
				}
			}
			var wantL []string
			for c := range want {
				wantL = append(wantL, c)
			}
			sort.Strings(add)
			sort.Strings(wantL)
			if !slices.Equal(add, wantL) {
				t.Errorf("%s/%s: capabilities %v, %s says %s need %v", o.name, c.Name, add, privilegesDoc, ann, wantL)
			}
			if !slices.Equal(drop, []string{"ALL"}) {
				t.Errorf("%s/%s: drop %v, want [ALL] (the runtime's defaults include capabilities rig does not use)", o.name, c.Name, drop)
			}
		}
	}
}

// The shipped Kubernetes scenarios reach pods these manifests make, in the
// namespace the kustomization puts them in, and between them every pod
// rig runs in: the sender and both responders.
func TestScenariosReachThesePods(t *testing.T) {
	k, objs := load(t)
	files, _ := filepath.Glob("../../scenarios/k8s-*.yaml")
	if !slices.Contains(files, "../../scenarios/k8s-pinned-vs-shared.yaml") {
		t.Fatalf("Kubernetes scenarios: %v", files)
	}
	reached := map[string]bool{}
	for _, f := range files {
		s, err := scenario.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range s.Hosts {
			cmd := h.Command
			if len(cmd) == 0 || cmd[0] != "kubectl" {
				t.Errorf("%s: host %s is not reached by kubectl: %q", f, h.Name, h.Via)
				continue
			}
			ns, pod := "", ""
			for i := 2; i < len(cmd)-1; i++ {
				switch {
				case cmd[i] == "-n" || cmd[i] == "--namespace":
					ns = cmd[i+1]
					i++
				case !strings.HasPrefix(cmd[i], "-"):
					pod = cmd[i]
				}
			}
			if ns != k.Namespace {
				t.Errorf("%s: host %s is in namespace %q, the manifests in %q", f, h.Name, ns, k.Namespace)
			}
			if o := objs[pod]; o == nil || o.kind != "Pod" {
				t.Errorf("%s: host %s reaches pod %q, which the manifests do not make", f, h.Name, pod)
			}
			reached[pod] = true
		}
	}
	for _, pod := range []string{"rig-sender", "rig-responder-pinned", "rig-responder-shared"} {
		if !reached[pod] {
			t.Errorf("no shipped scenario reaches pod %s", pod)
		}
	}
}

// With kubectl on PATH, the kustomization builds, and what it builds is
// what the files say, in the rig namespace, with the image set.
func TestKustomizeBuild(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not installed: the kustomization's build is not checked here")
	}
	out, err := exec.Command(kubectl, "kustomize", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, out)
	}
	n := 0
	for _, d := range docs(out) {
		o, err := decode("kustomize output", d)
		if err != nil {
			t.Fatal(err)
		}
		n++
		var meta struct {
			Metadata struct {
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(d, &meta); err != nil {
			t.Fatal(err)
		}
		if o.kind != "Namespace" && meta.Metadata.Namespace != "rig" {
			t.Errorf("%s %s: namespace %q", o.kind, o.name, meta.Metadata.Namespace)
		}
		if meta.Metadata.Labels["app.kubernetes.io/part-of"] != "rig" {
			t.Errorf("%s %s: labels %v", o.kind, o.name, meta.Metadata.Labels)
		}
		if o.spec != nil && o.podLabels["app.kubernetes.io/part-of"] != "rig" {
			t.Errorf("%s %s: its pods' labels %v lack app.kubernetes.io/part-of (labels: includeTemplates)", o.kind, o.name, o.podLabels)
		}
		if o.spec != nil && !strings.HasPrefix(o.spec.Containers[0].Image, "registry.example.com/rig:") {
			t.Errorf("%s %s: image %s", o.kind, o.name, o.spec.Containers[0].Image)
		}
	}
	if n != 6 {
		t.Errorf("kustomize built %d objects, want 6", n)
	}
}

// The image recipe copies what make dist builds and installs what the
// commands call.
func TestDockerfile(t *testing.T) {
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"COPY dist/rig-linux-${TARGETARCH} /usr/local/bin/rig", "stress-ng", " tini ", `ENTRYPOINT ["/usr/bin/tini", "--"]`} {
		if !bytes.Contains(b, []byte(w)) {
			t.Errorf("Dockerfile lacks %q", w)
		}
	}
	if !bytes.Contains(mk, []byte("$(DIST)/rig-linux-$$a")) {
		t.Error("make dist no longer writes dist/rig-linux-ARCH, which the Dockerfile copies")
	}
}
