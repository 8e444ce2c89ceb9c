from django.urls import path

from gateway.consumer import BrainConsumer

websocket_urlpatterns = [path("ws/brain/", BrainConsumer.as_asgi())]
