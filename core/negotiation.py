from rest_framework.exceptions import ValidationError
from rest_framework.negotiation import DefaultContentNegotiation


class FormatParamNegotiation(DefaultContentNegotiation):
    """`?format=` names a representation; an unknown one is a bad query value (400), not a missing page (404)."""

    def filter_renderers(self, renderers, format):
        available = [renderer for renderer in renderers if renderer.format == format]
        if not available:
            formats = ", ".join(sorted({renderer.format for renderer in renderers if renderer.format != "api"}))
            raise ValidationError({"format": [f"Unknown format; this endpoint offers: {formats}."]})
        return available

    def select_renderer(self, request, renderers, format_suffix=None):
        format_param = self.settings.URL_FORMAT_OVERRIDE
        if format_param and format_param in request.query_params and not request.query_params[format_param]:
            raise ValidationError({format_param: ["Must not be empty; leave it out for JSON."]})
        return super().select_renderer(request, renderers, format_suffix)
