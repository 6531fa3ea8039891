from django.http import HttpResponse
from django.urls import path

urlpatterns = [path("elsewhere/", lambda request: HttpResponse(), name="other")]
