// SPDX-License-Identifier: Apache-2.0

package pairing

import (
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"
)

// A status write refused as a conflict asks for a prompt pass and is
// not a failed pass; any other error is.
func TestStatusFailedConflictIsARetryNotAFault(t *testing.T) {
	p := &pass{log: klog.Background()}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "bluetooth.liken.sh", Resource: "peripherals"}, "e4-17-d8-c5-67-6d", errors.New("the object has been modified"))
	p.statusFailed("Peripheral e4-17-d8-c5-67-6d", conflict)
	if len(p.errs) != 0 {
		t.Errorf("a conflict failed the pass: %v", p.errs)
	}
	if p.res.After != conflictRetry {
		t.Errorf("next pass after %v, want %v", p.res.After, conflictRetry)
	}

	p.statusFailed("Peripheral e4-17-d8-c5-67-6d", errors.New("connection refused"))
	if len(p.errs) != 1 || p.errs[0].Error() != "Peripheral e4-17-d8-c5-67-6d status: connection refused" {
		t.Errorf("errors after a refused connection: %v, want the one naming the object", p.errs)
	}
}
