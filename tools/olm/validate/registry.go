//go:build registry

package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/sirupsen/logrus"
)

// registryFindings runs operator-registry's bundle format and content checks
// (those of `opm alpha bundle validate`, minus the image pull; neither uses the
// registry, so none is given).
func registryFindings(dir string) []Finding {
	logger := logrus.New()
	logger.SetOutput(io.Discard)
	validator := bundle.NewImageValidator(nil, logrus.NewEntry(logger))
	var found []Finding
	add := func(check string, err error) {
		if err == nil {
			return
		}
		var list bundle.ValidationError
		if !errors.As(err, &list) {
			found = append(found, Finding{Level: "error", Source: check, Type: "BundleNotValid", Message: err.Error()})
			return
		}
		for _, e := range list.Errors {
			found = append(found, Finding{Level: "error", Source: check, Type: "BundleNotValid", Message: e.Error()})
		}
	}
	add("bundle.ValidateBundleFormat", guarded(func() error { return validator.ValidateBundleFormat(dir) }))
	add("bundle.ValidateBundleContent", guarded(func() error {
		return validator.ValidateBundleContent(filepath.Join(dir, bundle.ManifestsDir))
	}))
	return found
}

// guarded turns a panic of check into an error: ValidateBundleContent (v1.73.0)
// dereferences a nil CSV when manifests/ holds objects but no
// ClusterServiceVersion; the api module's loader then names what is missing.
func guarded(check func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the check failed (panic: %v); manifests/ may lack a ClusterServiceVersion", r)
		}
	}()
	return check()
}
