package main

import "testing"

func TestCallerScope(t *testing.T) {
	for _, tt := range []struct {
		name, arn, callerID, want string
	}{
		{"a user", "arn:aws:iam::123456789012:user/cms", "AIDAEXAMPLE", "arn:aws:iam::123456789012:user/cms"},
		{"an assumed role: the session name left out", "arn:aws:sts::123456789012:assumed-role/cms/aws-go-sdk-1796115600", "AROAEXAMPLE:aws-go-sdk-1796115600", "arn:aws:sts::123456789012:assumed-role/cms"},
		{"another partition", "arn:aws-cn:sts::123456789012:assumed-role/cms/s1", "AROAEXAMPLE:s1", "arn:aws-cn:sts::123456789012:assumed-role/cms"},
		{"a federated user", "arn:aws:sts::123456789012:federated-user/bob", "123456789012:bob", "arn:aws:sts::123456789012:federated-user/bob"},
		{"an account's root", "arn:aws:iam::123456789012:root", "123456789012", "arn:aws:iam::123456789012:root"},
		{"no ARN", "", "AIDAEXAMPLE", "AIDAEXAMPLE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := callerScope(tt.arn, tt.callerID); got != tt.want {
				t.Errorf("callerScope(%q, %q) = %q, want %q", tt.arn, tt.callerID, got, tt.want)
			}
		})
	}
}
