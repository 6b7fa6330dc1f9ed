package main

import (
	"context"
	"fmt"

	"github.com/rig-project/rig/internal/version"
)

func init() {
	register(&command{name: "version", summary: "print rig, wire and sample format versions", run: func(ctx context.Context, args []string) error {
		fmt.Println(version.String())
		return nil
	}})
}
