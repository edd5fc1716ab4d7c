"""slicectl: EndpointSlices for any pod label selector, without a Service (KEP-6116)."""

__version__ = "0.1.0"
