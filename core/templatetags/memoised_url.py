"""The {% url %} tag with memoised reversing (core.urls.cached_reverse), installed as a template builtin
so that every template's {% url %} uses it; its output is Django's own tag's."""
from __future__ import annotations

from django import template
from django.template.defaulttags import URLNode
from django.template.defaulttags import url as django_url
from django.urls import NoReverseMatch
from django.utils.html import conditional_escape

from core.urls import cached_reverse

register = template.Library()


class MemoisedURLNode(URLNode):
    def render(self, context: template.Context) -> str:
        args = [arg.resolve(context) for arg in self.args]
        kwargs = {name: value.resolve(context) for name, value in self.kwargs.items()}
        view_name = self.view_name.resolve(context)
        try:
            current_app = context.request.current_app
        except AttributeError:
            try:
                current_app = context.request.resolver_match.namespace
            except AttributeError:
                current_app = None
        url = ""
        try:
            url = cached_reverse(view_name, args=args, kwargs=kwargs, current_app=current_app)
        except NoReverseMatch:
            if self.asvar is None:
                raise
        if self.asvar:
            context[self.asvar] = url
            return ""
        return conditional_escape(url) if context.autoescape else url


@register.tag
def url(parser: template.base.Parser, token: template.base.Token) -> MemoisedURLNode:
    node = django_url(parser, token)
    return MemoisedURLNode(node.view_name, node.args, node.kwargs, node.asvar)
