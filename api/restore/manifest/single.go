package manifest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Identity is the object a manifest must be: the group, kind, namespace
// and name the record holds for the version (not what its state says). An
// empty Kind (a version recorded before kinds were) is not compared.
type Identity struct {
	Group, Kind, Namespace, Name string
}

// CheckSingleObject makes sure that obj, exported as JSON or YAML, is read
// by kubectl as exactly one object, the one the record says it is. kubectl
// decodes a manifest with unstructured.UnstructuredJSONScheme, which takes
// any object with a top-level "items" field for a List and applies its
// items instead; a recorded state is written by a cluster user, so it may
// carry such a field, or an apiVersion, kind, namespace or name that is not
// the recorded object's. Such a state is refused (ErrNotObject), with the
// reason.
func CheckSingleObject(obj map[string]any, want Identity) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("%w: the manifest cannot be encoded: %v", ErrNotObject, err)
	}
	if err := checkDecoded(data, want); err != nil {
		return err
	}
	y, err := JSONToYAML(data)
	if err != nil {
		return fmt.Errorf("%w: the manifest cannot be encoded as YAML: %v", ErrNotObject, err)
	}
	docs, err := yamlDocuments(y)
	if err != nil {
		return fmt.Errorf("%w: the manifest's YAML does not read back: %v", ErrNotObject, err)
	}
	if len(docs) != 1 {
		return fmt.Errorf("%w: the manifest's YAML reads as %d documents, not one", ErrNotObject, len(docs))
	}
	j, err := utilyaml.ToJSON(docs[0])
	if err != nil {
		return fmt.Errorf("%w: the manifest's YAML does not read back: %v", ErrNotObject, err)
	}
	return checkDecoded(j, want)
}

// checkDecoded decodes data as kubectl does and compares what it gets.
func checkDecoded(data []byte, want Identity) error {
	got, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, nil)
	if err != nil {
		// Not the decoder's text: it can quote the recorded object.
		return fmt.Errorf("%w: kubectl would not read the manifest as one object (its apiVersion, kind, metadata or a top-level items field do not decode as kubectl reads them)", ErrNotObject)
	}
	u, ok := got.(*unstructured.Unstructured)
	if !ok || meta.IsListType(got) {
		return fmt.Errorf("%w: the recorded state has a top-level items field or a List kind, so kubectl would apply its items instead of the object", ErrNotObject)
	}
	gvk := u.GroupVersionKind()
	if gvk.Group != want.Group || (want.Kind != "" && gvk.Kind != want.Kind) {
		return fmt.Errorf("%w: the recorded state says it is a %q, but the record holds a %q", ErrNotObject,
			groupKind(gvk.Group, gvk.Kind), groupKind(want.Group, want.Kind))
	}
	if u.GetNamespace() != want.Namespace || u.GetName() != want.Name {
		return fmt.Errorf("%w: the recorded state names %q in namespace %q, but the record holds %q in namespace %q", ErrNotObject,
			u.GetName(), u.GetNamespace(), want.Name, want.Namespace)
	}
	return nil
}

func groupKind(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// yamlDocuments splits y as kubectl's YAML reader does.
func yamlDocuments(y []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(y)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(d)) > 0 {
			docs = append(docs, d)
		}
	}
}
