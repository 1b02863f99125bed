package localcluster

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// State is what a running cluster's owner records so another process (a
// 'status' command) can find its parts.
type State struct {
	// PID is the process that owns the cluster.
	PID int `json:"pid"`
	// APIServer is the API server's URL.
	APIServer string `json:"apiServer"`
	// Kubeconfig is the admin kubeconfig's path.
	Kubeconfig string `json:"kubeconfig"`
	// ControllerManager is the running kube-controller-manager.
	ControllerManager ControllerManagerState `json:"controllerManager"`
}

// ControllerManagerState is ControllerManager as recorded in a State.
type ControllerManagerState struct {
	PID         int    `json:"pid"`
	HealthzURL  string `json:"healthzURL"`
	CAFile      string `json:"caFile"`
	LogPath     string `json:"logPath"`
	StartupTime string `json:"startupTime"`
}

// State describes c as owned by the process pid.
func (c *Cluster) State(pid int) State {
	kcm := c.ControllerManager
	return State{
		PID: pid, APIServer: c.Config.Host, Kubeconfig: c.Kubeconfig,
		ControllerManager: ControllerManagerState{
			PID: kcm.PID, HealthzURL: kcm.HealthzURL, CAFile: kcm.CAFile, LogPath: kcm.LogPath,
			StartupTime: kcm.StartupTime.Round(time.Millisecond).String(),
		},
	}
}

// WriteState records s at path, readable only by its owner.
func WriteState(path string, s State) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o600)
}

// ReadState reads a State WriteState recorded.
func ReadState(path string) (State, error) {
	var s State
	data, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, fmt.Errorf("reading %s: %w", path, err)
	}
	return s, nil
}
