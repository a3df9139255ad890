//go:build !options_record_no_azure

package app

import _ "gocloud.dev/blob/azureblob" // --checkpoint-url azblob://container
