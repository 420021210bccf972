package frontend

import (
	"context"

	"github.com/skeinlang/skein/graphir"
)

// ChildLoader returns the loader of the child flows a run names at run
// time (a templated flow=), for vm.Options.LoadFlow. Each child is loaded
// and checked as [Load] does, with these options' budgets, inside the
// flow root the VM gives (the parent's). A child that does not load or
// check is an [*Error], its first error on one line.
//
// When record is not nil it is given every file a child's load read, so
// that a run records the child's sources as it did its flow's; an error
// from it fails the load. A child among [Options.Recorded] is loaded from
// them and not recorded again: it was when the run first loaded it.
func (o Options) ChildLoader(record func(graphir.Source) error) func(ctx context.Context, path, root string) (*graphir.Graph, error) {
	return func(ctx context.Context, path, root string) (*graphir.Graph, error) {
		opts := o
		opts.Root, opts.Context = root, ctx
		rec := record
		if o.Recorded != nil && o.Recorded.Has(path) {
			rec = nil
		} else {
			opts.Recorded = nil
		}
		f := Load(path, opts)
		if rec != nil {
			for _, s := range f.Sources.List() {
				if err := rec(s); err != nil {
					return nil, err
				}
			}
		}
		if err := f.Err(); err != nil {
			return nil, err
		}
		return f.Graph, nil
	}
}
