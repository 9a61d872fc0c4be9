package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"time"

	dockersandbox "github.com/visorhq/visor/docker/sandbox"
	"github.com/visorhq/visor/services/fault"
)

// imageProbe says whether the Docker Engine answers and holds an image;
// its error is a sandbox unavailable error (docker_unreachable,
// image_missing, ...).
type imageProbe func(ctx context.Context, image string) error

// dockerImageProbe asks the local Docker Engine (DOCKER_HOST, else the
// socket) about image.
func dockerImageProbe(ctx context.Context, image string) error {
	r, err := dockersandbox.New(dockersandbox.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	defer r.Close()
	return r.ImageReady(ctx, image)
}

// devSandbox decides whether `visor dev` runs a sandbox worker in its own
// process, so execute_program works on a developer machine without a
// second command: yes when VISOR_SANDBOX_WORKER says so, no when it says
// not, and otherwise yes exactly when the engine answers and holds the
// default image. It returns the progress line, which says how to get a
// worker when there is none.
func devSandbox(ctx context.Context, cfg *Config, explicit string, probe imageProbe) string {
	image := cfg.Sandbox.Images[0]
	switch {
	case explicit != "" && cfg.Sandbox.Worker:
		return "sandbox worker running in this process (VISOR_SANDBOX_WORKER=true), image " + image
	case explicit != "":
		return "no sandbox worker (VISOR_SANDBOX_WORKER=false): execute_program answers no_worker"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := probe(ctx, image); err != nil {
		why := strings.Replace(fault.Message(err), " The script was not run.", "", 1)
		return "no sandbox worker, so execute_program answers no_worker. " + why + ", then restart visor dev"
	}
	cfg.Sandbox.Worker = true
	return "sandbox worker running in this process (Docker Engine and image " + image + " found)"
}
