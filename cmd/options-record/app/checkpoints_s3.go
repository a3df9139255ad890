//go:build !options_record_no_s3

package app

import _ "gocloud.dev/blob/s3blob" // --checkpoint-url s3://bucket
