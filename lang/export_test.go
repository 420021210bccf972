package lang

import (
	"errors"

	"github.com/skeinlang/skein/graphir"
)

func asGraphError(err error) *graphir.Error {
	var e *graphir.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}
