//go:build !options_record_no_gcs

package app

import _ "gocloud.dev/blob/gcsblob" // --checkpoint-url gs://bucket
