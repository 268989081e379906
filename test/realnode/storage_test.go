package realnode

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gomomento/valkey-operator/internal/localkube"
)

// volumesDir holds the directory of each volume the provisioner made.
var volumesDir string

// startStorage installs the default StorageClass and runs its provisioner
// against the control plane: the real PV controller binds each claim once
// its pod is scheduled, and the node's kubelet mounts the volume, a
// directory under dir. It returns what stops the provisioner.
func startStorage(ctx context.Context, dir string) (func(), error) {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithCancel(ctx)
	wait, err := localkube.StartDirStorage(pctx, cs, dir, ctrl.Log.WithName("provisioner"))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("storage: %w", err)
	}
	volumesDir = dir
	return func() { cancel(); wait() }, nil
}
