package resolve

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gomomento/valkey-operator/api/v1alpha1"
)

func TestPodSettingsInheritance(t *testing.T) {
	tolerate := func(key string) []corev1.Toleration {
		return []corev1.Toleration{{Key: key, Operator: corev1.TolerationOpExists}}
	}
	spread := []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "rack", WhenUnsatisfiable: corev1.DoNotSchedule}}
	affinity := &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{}}
	for _, tc := range []struct {
		name        string
		child, root *v1alpha1.PodSettings
		want        *v1alpha1.PodSettings
	}{
		{name: "none set"},
		{name: "root only", root: &v1alpha1.PodSettings{Tolerations: tolerate("pool"), PriorityClassName: "high"},
			want: &v1alpha1.PodSettings{Tolerations: tolerate("pool"), PriorityClassName: "high"}},
		{name: "child's list replaces the root's whole",
			child: &v1alpha1.PodSettings{Tolerations: tolerate("spot")},
			root:  &v1alpha1.PodSettings{Tolerations: tolerate("pool"), TopologySpreadConstraints: spread, Affinity: affinity},
			want:  &v1alpha1.PodSettings{Tolerations: tolerate("spot"), TopologySpreadConstraints: spread, Affinity: affinity}},
		{name: "an empty list clears the root's",
			child: &v1alpha1.PodSettings{Tolerations: []corev1.Toleration{}, ImagePullSecrets: []v1alpha1.PullSecretRef{}},
			root:  &v1alpha1.PodSettings{Tolerations: tolerate("pool"), ImagePullSecrets: []v1alpha1.PullSecretRef{{Name: "mirror"}}},
			want:  &v1alpha1.PodSettings{Tolerations: []corev1.Toleration{}, ImagePullSecrets: []v1alpha1.PullSecretRef{}}},
		{name: "child's priority wins",
			child: &v1alpha1.PodSettings{PriorityClassName: "low"},
			root:  &v1alpha1.PodSettings{PriorityClassName: "high"},
			want:  &v1alpha1.PodSettings{PriorityClassName: "low"}},
		{name: "maps merge key by key, the child's value winning",
			child: &v1alpha1.PodSettings{
				Labels:       map[string]v1alpha1.LabelValue{"team": "b"},
				Annotations:  map[string]string{"x": "child"},
				NodeSelector: map[string]string{"disk": "ssd"}},
			root: &v1alpha1.PodSettings{
				Labels:       map[string]v1alpha1.LabelValue{"team": "a", "cost": "1"},
				Annotations:  map[string]string{"x": "root", "y": "root"},
				NodeSelector: map[string]string{"pool": "cache"}},
			want: &v1alpha1.PodSettings{
				Labels:       map[string]v1alpha1.LabelValue{"team": "b", "cost": "1"},
				Annotations:  map[string]string{"x": "child", "y": "root"},
				NodeSelector: map[string]string{"pool": "cache", "disk": "ssd"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			menu := fakeMenu{
				configs: map[string]v1alpha1.ValkeyConfigSpec{
					"child": {BaseRef: "root", Pod: tc.child},
					"root":  {ImageRef: "v8", Pod: tc.root},
				},
				images: map[string]v1alpha1.ValkeyImageSpec{"v8": {Repository: "valkey/valkey", Tag: "8.1", Version: "8.1.0"}},
			}
			got, err := Config(context.Background(), menu, "child")
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Pod, tc.want) {
				t.Errorf("pod settings\n got %+v\nwant %+v", got.Pod, tc.want)
			}
			if tc.root != nil && got.Pod != nil && len(got.Pod.Tolerations) > 0 && len(tc.root.Tolerations) > 0 &&
				&got.Pod.Tolerations[0] == &tc.root.Tolerations[0] {
				t.Error("the resolved tolerations alias the config's")
			}
		})
	}
}
