package csv

import (
	"errors"
	"fmt"
	"strings"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Decode reads a CSV from YAML or JSON, matching field names case-sensitively
// as the API server does. Unknown and duplicate fields are an error: OLM
// ignores a misspelt field (webhookDefinitions, clusterpermissions), so a typo
// would silently drop part of the install.
func Decode(data []byte) (*ClusterServiceVersion, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("decoding the ClusterServiceVersion: %w", err)
	}
	c := &ClusterServiceVersion{}
	strict, err := kjson.UnmarshalStrict(j, c, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("decoding the ClusterServiceVersion: %w", err)
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("decoding the ClusterServiceVersion: %w", errors.Join(strict...))
	}
	return c, nil
}

// Encode writes a CSV as YAML with sorted keys.
func Encode(c *ClusterServiceVersion) ([]byte, error) {
	return yaml.Marshal(c)
}

// Deployment returns the install strategy's deployment of that name, or nil.
func (c *ClusterServiceVersion) Deployment(name string) *DeploymentSpec {
	for i := range c.Spec.Install.Spec.Deployments {
		if c.Spec.Install.Spec.Deployments[i].Name == name {
			return &c.Spec.Install.Spec.Deployments[i]
		}
	}
	return nil
}

// Supports reports whether the install mode of that type is listed as
// supported.
func (c *ClusterServiceVersion) Supports(installMode string) bool {
	for _, m := range c.Spec.InstallModes {
		if m.Type == installMode {
			return m.Supported
		}
	}
	return false
}

// ServiceName is the Service OLM creates in front of a deployment that serves
// webhooks: the deployment name with dots turned into dashes, plus -service.
func ServiceName(deploymentName string) string {
	return strings.ReplaceAll(deploymentName, ".", "-") + "-service"
}
