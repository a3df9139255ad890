package app

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// collect lists pages (opts.Limit items each, following continue tokens)
// until the list ends or limit items are read, and returns at most limit.
func collect[T any](opts metav1.ListOptions, limit int64, page func(metav1.ListOptions) (items []T, cont string, err error)) ([]T, error) {
	opts.Limit = min(limit, 100)
	var all []T
	for {
		items, cont, err := page(opts)
		if err != nil {
			return nil, err
		}
		all = append(all, items...)
		if cont == "" || int64(len(all)) >= limit {
			break
		}
		opts.Continue = cont
	}
	return all[:min(int64(len(all)), limit)], nil
}
