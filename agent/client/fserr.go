package client

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/drover/drover/api"
)

// badPathError maps the kernel's refusals of a user-given path as a name
// (a component over NAME_MAX, 255 bytes, or the whole over PATH_MAX:
// ENAMETOOLONG; a name the filesystem cannot hold: EILSEQ) to a 400. Any
// other error, and one that already carries an API error, is returned as
// it is.
func badPathError(err error) error {
	var e *api.Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	switch {
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fmt.Errorf("%w: %v", api.Errorf(api.ErrBadRequest, "path name too long (a component over 255 bytes or the whole path over 4096)"), err)
	case errors.Is(err, syscall.EILSEQ):
		return fmt.Errorf("%w: %v", api.Errorf(api.ErrBadRequest, "path name not valid on this filesystem"), err)
	}
	return err
}
