package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/agent"
	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/version"
	"github.com/rig-project/rig/internal/wire"
)

func init() {
	register(&command{name: "version", summary: "print rig, wire, sample, run-directory and agent protocol versions (also rig --version)",
		usage: "[--format text|json]", flags: versionFlags})
}

// versions is `rig version --format json`.
type versions struct {
	Rig                  string `json:"rig"`
	Commit               string `json:"commit"`
	WireFormat           int    `json:"wire_format"`
	SampleFormat         int    `json:"sample_format"`
	RunDirectoryFormat   int    `json:"run_directory_format"`
	AgentProtocol        string `json:"agent_protocol"`
	AgentProtocolVersion int    `json:"agent_protocol_version"`
}

func versionFlags(fs *flag.FlagSet) func(context.Context) error {
	format := addFormat(fs, "", "text", "json")
	return func(ctx context.Context) error {
		if err := noArgs(fs); err != nil {
			return err
		}
		if format.value == "json" {
			e := json.NewEncoder(os.Stdout)
			e.SetIndent("", "  ")
			return e.Encode(versions{Rig: version.Version, Commit: version.Commit(), WireFormat: wire.Version, SampleFormat: samples.FormatVersion,
				RunDirectoryFormat: rundir.FormatVersion, AgentProtocol: agent.Proto, AgentProtocolVersion: agent.Version})
		}
		fmt.Println(version.String())
		fmt.Printf("wire format %d, sample format %d, run directory format %d, agent protocol %s %d\n",
			wire.Version, samples.FormatVersion, rundir.FormatVersion, agent.Proto, agent.Version)
		return nil
	}
}
