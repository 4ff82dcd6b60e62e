// Command validate checks an OLM bundle directory (manifests/ + metadata/) with
// the operator-framework's own validation code, as `operator-sdk bundle
// validate` does without pulling an image:
//
//   - github.com/operator-framework/api: manifests.GetBundleFromDir, then
//     validation.DefaultBundleValidators (CSV, CRD, Bundle) plus the
//     good-practices, object and deprecated-API validators, and, unless
//     -operatorhub=false, OperatorHub's (V2, standard categories, standard
//     capabilities);
//   - github.com/operator-framework/operator-registry (built with the
//     `registry` tag): the bundle format (directories, metadata/annotations.yaml)
//     and content (kinds allowed in a registry+v1 bundle, each object decodable)
//     checks of `opm alpha bundle validate`.
//
// Each finding is printed on its own line, "<error|warning>\t<source>\t<message>",
// or as a JSON array with -json. The exit status is 1 when there is any error,
// 2 on bad usage, 0 otherwise (warnings alone pass).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// Finding is one error or warning of one validator.
type Finding struct {
	Level   string `json:"level"`   // "error" or "warning"
	Source  string `json:"source"`  // the validated object or the check that found it
	Type    string `json:"type"`    // the validator's error type, e.g. "FieldNotFound"
	Field   string `json:"field"`   // the YAML path, when the validator names one
	Message string `json:"message"` // the validator's own message
}

func fromAPI(result apierrors.ManifestResult, e apierrors.Error) Finding {
	level := "warning"
	if e.Level == apierrors.LevelError {
		level = "error"
	}
	return Finding{
		Level:   level,
		Source:  result.Name,
		Type:    string(e.Type),
		Field:   e.Field,
		Message: strings.TrimPrefix(e.Error(), string(e.Level)+": "),
	}
}

func apiFindings(dir string, operatorHub bool, k8sVersion string) []Finding {
	bundle, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return []Finding{{Level: "error", Source: "manifests.GetBundleFromDir", Type: "BundleNotLoaded", Message: err.Error()}}
	}
	if bundle == nil || bundle.CSV == nil {
		return []Finding{{Level: "error", Source: "manifests.GetBundleFromDir", Type: "BundleNotLoaded", Message: "no ClusterServiceVersion found in " + dir}}
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.GoodPracticesValidator,
		validation.ObjectValidator,
		validation.AlphaDeprecatedAPIsValidator,
	)
	if operatorHub {
		validators = validators.WithValidators(
			validation.OperatorHubV2Validator,
			validation.StandardCategoriesValidator,
			validation.StandardCapabilitiesValidator,
		)
	}
	objects := bundle.ObjectsToValidate()
	if k8sVersion != "" {
		// The validators' optional values travel as a map among the objects.
		objects = append(objects, map[string]string{"k8s-version": k8sVersion})
	}
	var found []Finding
	for _, result := range interfaces.Validators(validators).Validate(objects...) {
		for _, e := range result.Errors {
			found = append(found, fromAPI(result, e))
		}
		for _, e := range result.Warnings {
			found = append(found, fromAPI(result, e))
		}
	}
	return found
}

func main() {
	asJSON := flag.Bool("json", false, "print the findings as a JSON array")
	operatorHub := flag.Bool("operatorhub", true, "also run OperatorHub's validators (V2, categories, capabilities)")
	k8sVersion := flag.String("k8s-version", "", "the Kubernetes version to check deprecated and removed APIs against (e.g. 1.30)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [flags] BUNDLE_DIR\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir := flag.Arg(0)
	if info, err := os.Stat(dir); err != nil || !info.IsDir() {
		fmt.Fprintf(os.Stderr, "%s is not a directory\n", dir)
		os.Exit(2)
	}

	found := append(registryFindings(dir), apiFindings(dir, *operatorHub, *k8sVersion)...)
	if found == nil {
		found = []Finding{}
	}
	failed := false
	for _, f := range found {
		failed = failed || f.Level == "error"
	}
	if *asJSON {
		out := json.NewEncoder(os.Stdout)
		out.SetIndent("", "  ")
		if err := out.Encode(found); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	} else {
		for _, f := range found {
			fmt.Printf("%s\t%s\t%s\n", f.Level, f.Source, f.Message)
		}
	}
	if failed {
		os.Exit(1)
	}
}
