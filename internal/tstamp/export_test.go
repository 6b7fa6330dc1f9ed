package tstamp

// NewPHCWith is a PHC over any PHCDevice: the drivers' clock profiles.
func NewPHCWith(dev PHCDevice) *PHC { return &PHC{dev: dev, Samples: 5} }
