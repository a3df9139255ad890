package filter

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/options-record/options-record/api/v1alpha1"
)

// LoadFile reads a rules file: see Parse.
func LoadFile(path string) ([]v1alpha1.OptionsRecordController, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read rules file: %w", err)
	}
	objs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("rules file %s: %w", path, err)
	}
	return objs, nil
}

// Parse decodes a stream of YAML (or JSON) documents separated by "---"
// lines. Each document is an OptionsRecordController, an
// OptionsRecordControllerList, or a v1 List of OptionsRecordController
// objects (as `kubectl get orc -o yaml` prints). Empty documents are
// skipped. Decoding is strict: unknown or duplicate fields, and any other
// apiVersion or kind, are errors that name the document's number (counting
// non-empty documents from 1). Parse returns every error it found, and no
// objects when there is one. It does not validate specs; Compile does.
func Parse(data []byte) ([]v1alpha1.OptionsRecordController, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []v1alpha1.OptionsRecordController
	var errs []error
	n := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", n+1, err))
			break
		}
		js, err := yaml.YAMLToJSONStrict(doc)
		if err == nil && isEmptyDocument(js) {
			continue
		}
		n++
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", n, err))
			continue
		}
		got, err := decodeDocument(js)
		if err != nil {
			errs = append(errs, fmt.Errorf("document %d: %w", n, err))
			continue
		}
		objs = append(objs, got...)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return objs, nil
}

func isEmptyDocument(js []byte) bool {
	js = bytes.TrimSpace(js)
	return len(js) == 0 || string(js) == "null"
}

func decodeDocument(js []byte) ([]v1alpha1.OptionsRecordController, error) {
	var tm metav1.TypeMeta
	if err := utiljson.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("not a Kubernetes object: %w", err)
	}
	gv := v1alpha1.GroupVersion.String()
	switch {
	case tm.APIVersion == gv && tm.Kind == v1alpha1.Kind:
		var obj v1alpha1.OptionsRecordController
		if err := decodeStrict(js, &obj); err != nil {
			return nil, err
		}
		return []v1alpha1.OptionsRecordController{obj}, nil

	case tm.APIVersion == gv && tm.Kind == v1alpha1.ListKind:
		var list v1alpha1.OptionsRecordControllerList
		if err := decodeStrict(js, &list); err != nil {
			return nil, err
		}
		for i := range list.Items {
			item := &list.Items[i]
			if item.APIVersion == "" && item.Kind == "" {
				item.APIVersion, item.Kind = gv, v1alpha1.Kind
			}
			if err := checkTypeMeta(item.TypeMeta); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
		}
		return list.Items, nil

	case tm.APIVersion == "v1" && tm.Kind == "List":
		var list struct {
			metav1.TypeMeta `json:",inline"`
			metav1.ListMeta `json:"metadata,omitempty"`
			Items           []json.RawMessage `json:"items"`
		}
		if err := decodeStrict(js, &list); err != nil {
			return nil, err
		}
		objs := make([]v1alpha1.OptionsRecordController, 0, len(list.Items))
		for i, raw := range list.Items {
			var obj v1alpha1.OptionsRecordController
			if err := utiljson.Unmarshal(raw, &obj.TypeMeta); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			if err := checkTypeMeta(obj.TypeMeta); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			if err := decodeStrict(raw, &obj); err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			objs = append(objs, obj)
		}
		return objs, nil
	}
	return nil, checkTypeMeta(tm)
}

func checkTypeMeta(tm metav1.TypeMeta) error {
	if tm.APIVersion == v1alpha1.GroupVersion.String() && tm.Kind == v1alpha1.Kind {
		return nil
	}
	return fmt.Errorf("apiVersion %q, kind %q: want apiVersion %s, kind %s (or a list of them)",
		tm.APIVersion, tm.Kind, v1alpha1.GroupVersion, v1alpha1.Kind)
}

// decodeStrict decodes like the apiserver with strict field validation:
// field names are case-sensitive, and unknown or duplicate fields are errors.
func decodeStrict(js []byte, into any) error {
	strict, err := kjson.UnmarshalStrict(js, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
